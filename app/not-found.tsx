import Link from "next/link";

export const metadata = { title: "Not found" };

/** Unknown pages and unknown runs (app/runs/[id]/layout.tsx calls notFound()): HTTP 404. */
export default function NotFound() {
  return (
    <div className="mx-auto max-w-xl space-y-3 py-12 text-center" data-testid="not-found">
      <h1 className="text-xl font-semibold tracking-tight">Not found</h1>
      <p className="text-sm text-zinc-500">No page or run lives at this address. It may have been deleted, or the link is mistyped.</p>
      <p className="text-sm">
        <Link href="/runs" className="text-indigo-600 hover:underline dark:text-indigo-400">
          All runs
        </Link>
        {" · "}
        <Link href="/runs/new" className="text-indigo-600 hover:underline dark:text-indigo-400">
          Launch a run
        </Link>
      </p>
    </div>
  );
}

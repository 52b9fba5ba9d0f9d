"use client";
// The error boundary of every page: what failed, in words, and a retry that re-renders the page.
import Link from "next/link";
import { useEffect } from "react";

export default function PageError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  useEffect(() => console.error(error), [error]);
  return (
    <div className="mx-auto max-w-xl space-y-3 py-12 text-center" role="alert" data-testid="page-error">
      <h1 className="text-xl font-semibold tracking-tight">This page failed to load</h1>
      <p className="text-sm text-zinc-500">
        {error.message || "An unexpected error occurred."}
        {error.digest ? ` (digest ${error.digest}: see the server log)` : ""}
      </p>
      <p className="flex justify-center gap-3 text-sm">
        <button
          type="button"
          onClick={reset}
          className="rounded-md border border-zinc-300 px-3 py-1 hover:bg-zinc-100 dark:border-zinc-700 dark:hover:bg-zinc-800"
        >
          Try again
        </button>
        <Link href="/runs" className="px-3 py-1 text-indigo-600 hover:underline dark:text-indigo-400">
          All runs
        </Link>
      </p>
    </div>
  );
}

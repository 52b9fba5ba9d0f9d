import { Suspense } from "react";
import { SearchView } from "@/components/search/search-view";
import { Hydrate } from "@/components/ui/hydrate";
import { searchTrajectories } from "@/lib/db/trajectory-search";
import { searchParamsOf, searchQuery } from "@/lib/queries/search";
import { trajectorySearchQuerySchema } from "@/lib/schemas/search";

export const dynamic = "force-dynamic";
export const metadata = { title: "Trajectory search" };

/** The first page of the URL's search comes with the page, under the key the view reads; a query the API refuses is left to the view to report. */
export default async function SearchPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const sp = await searchParams;
  const params = searchParamsOf((k) => (typeof sp[k] === "string" ? (sp[k] as string) : undefined));
  const parsed = trajectorySearchQuerySchema.safeParse(params);
  const first = parsed.success ? await searchTrajectories(parsed.data).catch(() => undefined) : undefined;
  const seed: [readonly unknown[], unknown][] = parsed.success ? [[searchQuery(params).queryKey, first]] : [];
  return (
    <Hydrate seed={seed}>
      <Suspense fallback={<p className="text-sm text-zinc-500">Loading…</p>}>
        <SearchView />
      </Suspense>
    </Hydrate>
  );
}

import { notFound, redirect } from "next/navigation";
import { getSweep } from "@/lib/db/sweeps";
import { errorKind } from "@/lib/schemas/errors";

export const dynamic = "force-dynamic";

/** A sweep opens as the comparison of its runs, grouped by grid point, with its progress on top. */
export default async function SweepPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  let runIds: string[];
  try {
    runIds = getSweep(id).runIds;
  } catch (err) {
    if (errorKind(err) === "not_found") notFound();
    throw err;
  }
  redirect(`/compare?runs=${runIds.join(",")}&group=sweep&band=std&sweep=${encodeURIComponent(id)}`);
}

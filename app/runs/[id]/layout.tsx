import { notFound } from "next/navigation";
import type { ReactNode } from "react";
import { assertRunExists } from "@/lib/db/runs";
import { NotFoundError } from "@/lib/schemas/errors";

export const dynamic = "force-dynamic";

/**
 * Every page of a run (overview, credit, trajectories) answers 404 at once for an unknown id: the
 * check runs before anything streams (the runs list's loading skeleton sits in the (list) route
 * group so that it does not wrap this layout and send a 200 first).
 */
export default async function RunLayout({ children, params }: { children: ReactNode; params: Promise<{ id: string }> }) {
  const { id } = await params;
  try {
    assertRunExists(id);
  } catch (e) {
    if (e instanceof NotFoundError) notFound();
    throw e;
  }
  return children;
}

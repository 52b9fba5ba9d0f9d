// The server-side prefetch both step pages share (the credit heatmap and the trajectory browser):
// the run, its steps, the chosen step's groups and the chosen group, seeded under the client's
// query keys. Anything that fails here is fetched, and reported, by the client.
import { tryRead } from "@/components/ui/hydrate";
import { getRun } from "@/lib/db/runs";
import { listGroups, listSteps } from "@/lib/db/rollouts";
import { defaultGroup } from "@/lib/charts/prepare-heatmap";
import { groupsQuery, runQuery, stepsQuery } from "@/lib/queries";

type Groups = ReturnType<typeof listGroups>;
export type Search = Record<string, string | string[] | undefined>;

/** A search parameter's single value. */
export const searchValue = (sp: Search) => (k: string) => (typeof sp[k] === "string" ? (sp[k] as string) : undefined);

/**
 * `?step=` (else the first step) and `?group=` (else the default group, lib/charts' `defaultGroup`,
 * among `pick` of the step's groups: all of them unless the page narrows them). `seed` holds the run, steps and groups for `<Hydrate>`; the page adds its own.
 */
export function seedStepAndGroup(id: string, sp: Search, pick: (groups: Groups | undefined) => Groups | undefined = (g) => g) {
  const one = searchValue(sp);
  const run = tryRead(() => getRun(id));
  const steps = run ? tryRead(() => listSteps(id, 1, 1000)) : undefined;
  const step = one("step") !== undefined ? Number(one("step")) : steps?.steps[0]?.step;
  const groups = step !== undefined && Number.isInteger(step) ? tryRead(() => ({ groups: listGroups(id, step) })) : undefined;
  const groupId = one("group") ?? defaultGroup(pick(groups?.groups))?.id;
  const seed: [readonly unknown[], unknown][] = [
    [runQuery(id).queryKey, run],
    [stepsQuery(id).queryKey, steps],
  ];
  if (step !== undefined && groups) seed.push([groupsQuery(id, step).queryKey, groups]);
  return { seed, step, groupId, one };
}

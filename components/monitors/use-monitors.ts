"use client";
// The monitors editor's state: the project (the URL's `project`, else the first), its rules and
// webhook as stored (or the defaults), the draft being edited, and Save through the rules route
// with the server's issues routed to their rule and field.
import { useEffect, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiClientError, callRoute } from "@/lib/client/api";
import { routes } from "@/lib/queries";
import { alertRulesQuery, projectsQuery } from "@/lib/queries/alerts";
import { DEFAULT_ALERT_RULES, type AlertConfig, type AlertRule } from "@/lib/schemas/alerts";
import { editRule, ruleErrors, type RuleErrors } from "@/lib/forms/alert-rule-fields";
import { useUrlState } from "@/components/ui/use-url-state";

interface Draft {
  rules: AlertRule[];
  /** a stable React key per rule (its id is editable) */
  keys: number[];
  webhookUrl: string;
}

let nextKey = 0;
const keysFor = (n: number) => Array.from({ length: n }, () => nextKey++);
const draftOf = (c: AlertConfig): Draft => ({ rules: c.rules.map((r) => ({ ...r })), keys: keysFor(c.rules.length), webhookUrl: c.webhookUrl ?? "" });

/** A new rule: a threshold on a metric, with an id no other rule has. */
function newRule(rules: readonly AlertRule[]): AlertRule {
  let n = rules.length + 1;
  while (rules.some((r) => r.id === `rule-${n}`)) n++;
  return { id: `rule-${n}`, name: "", metric: "", kind: "threshold", k: 5, op: "above", value: 0, enabled: true };
}

export function useMonitors() {
  const { get, set } = useUrlState();
  const qc = useQueryClient();
  const projects = useQuery(projectsQuery()).data?.projects ?? [];
  const projectId = get("project") ?? projects[0]?.id ?? "";
  const config = useQuery(alertRulesQuery(projectId));
  const [draft, setDraft] = useState<Draft | null>(null);
  const [errors, setErrors] = useState<RuleErrors>({ rules: {}, banner: [] });
  const [saved, setSaved] = useState(false);
  // a fresh draft whenever the stored config arrives (another project, or after a save)
  useEffect(() => {
    if (config.data) setDraft(draftOf(config.data));
  }, [config.data]);
  const edit = (d: Draft) => (setDraft(d), setSaved(false));
  const save = useMutation({
    mutationFn: (d: Draft) => callRoute(routes.alertRulesSet, { params: { id: projectId }, body: { rules: d.rules, webhookUrl: d.webhookUrl.trim() || null } }),
    onMutate: () => setErrors({ rules: {}, banner: [] }),
    onSuccess: (c) => (qc.setQueryData(alertRulesQuery(projectId).queryKey, c), setSaved(true)),
    onError: (e) => setErrors(e instanceof ApiClientError && e.issues.length ? ruleErrors(e.issues) : { rules: {}, banner: [(e as Error).message] }),
  });
  return {
    projects,
    projectId,
    setProject: (id: string) => (set({ project: id }), setErrors({ rules: {}, banner: [] }), setSaved(false)),
    config: config.data,
    error: config.error,
    draft,
    errors,
    saved,
    setRule: (i: number, name: string, value: unknown) =>
      draft && edit({ ...draft, rules: draft.rules.map((r, j) => (j === i ? editRule(r, name, value) : r)) }),
    addRule: () => draft && edit({ ...draft, rules: [...draft.rules, newRule(draft.rules)], keys: [...draft.keys, ...keysFor(1)] }),
    removeRule: (i: number) => draft && edit({ ...draft, rules: draft.rules.filter((_, j) => j !== i), keys: draft.keys.filter((_, j) => j !== i) }),
    setWebhook: (url: string) => draft && edit({ ...draft, webhookUrl: url }),
    /** the default rules in the draft; Save stores them as the project's own */
    resetToDefaults: () => draft && edit({ ...draft, rules: DEFAULT_ALERT_RULES.map((r) => ({ ...r })), keys: keysFor(DEFAULT_ALERT_RULES.length) }),
    save: () => draft && save.mutate(draft),
    saving: save.isPending,
  };
}
export type MonitorsState = ReturnType<typeof useMonitors>;

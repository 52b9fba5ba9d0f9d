"use client";
// A project's monitors: its alert rules (or the default rules, marked as such, while it has none of
// its own), each edited with fields generated from the rule schema; rules added and removed, the
// webhook URL, Save (the server's errors shown at their fields) and Reset to defaults.
import { SchemaFields } from "@/components/forms/schema-form";
import { btnCls, cardCls, inputCls, labelCls, primaryBtnCls } from "@/components/ui/controls";
import { Fragment } from "react";
import { ALERT_RULE_HELP, ruleFields } from "@/lib/forms/alert-rule-fields";
import { useMonitors, type MonitorsState } from "./use-monitors";

export function MonitorsView() {
  const st = useMonitors();
  const { projects, projectId, setProject, config, draft, error } = st;
  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold tracking-tight">Monitors</h1>
        <label htmlFor="monitors-project" className={labelCls}>
          Project
        </label>
        <select id="monitors-project" className={inputCls} value={projectId} onChange={(e) => setProject(e.target.value)}>
          {projects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
        {config ? (
          <span
            className={`rounded px-1.5 text-xs font-medium ${config.defaults ? "bg-zinc-100 text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300" : "bg-indigo-50 text-indigo-800 dark:bg-indigo-950 dark:text-indigo-200"}`}
            data-testid="monitors-source"
          >
            {config.defaults ? "default rules (the project has none of its own)" : "the project's own rules"}
          </span>
        ) : null}
      </div>
      <div className="max-w-4xl space-y-1 text-sm text-zinc-600 dark:text-zinc-400">
        <p>
          Each rule compares the mean of the last <em>k</em> points of a metric (or of a step diagnostic, <span className="font-mono">diag/…</span>) with a
          threshold, its baseline (trend), the k points before (growth) or the first steps' advantage distribution (drift); an alert opens where it starts to
          hold. Rules run on every run of the project as its steps arrive.
        </p>
        <dl className="grid grid-cols-[max-content_1fr] gap-x-3 text-xs" data-testid="monitors-help">
          {ALERT_RULE_HELP.map(([name, help]) => (
            <Fragment key={name}>
              <dt className="font-mono">{name}</dt>
              <dd>{help}</dd>
            </Fragment>
          ))}
        </dl>
      </div>
      {error ? (
        <p className="text-sm text-red-600" role="alert">
          {error.message}
        </p>
      ) : !projects.length ? (
        <p className="text-sm text-zinc-500">No project yet: rules belong to a project, made with its first run.</p>
      ) : !draft ? (
        <p className="text-sm text-zinc-500">Loading the rules…</p>
      ) : (
        <RulesEditor st={st} />
      )}
    </div>
  );
}

function RulesEditor({ st }: { st: MonitorsState }) {
  const { draft, errors, setRule, addRule, removeRule, setWebhook, resetToDefaults, save, saving, saved } = st;
  if (!draft) return null;
  return (
    <>
      {draft.rules.length === 0 ? <p className="text-sm text-zinc-500">No rules: Save turns this project's alerts off.</p> : null}
      <div className="grid gap-3 lg:grid-cols-2 2xl:grid-cols-3">
        {draft.rules.map((r, i) => (
          <section key={draft.keys[i]} className={`${cardCls} space-y-3 p-3`} aria-label={`Rule ${r.name || r.id}`} data-testid="monitor-rule">
            <div className="flex items-center gap-3">
              <h2 className="font-medium">{r.name || r.id}</h2>
              <span className="font-mono text-xs text-zinc-500">{r.kind}</span>
              <button type="button" className={`${btnCls} ml-auto text-xs`} onClick={() => removeRule(i)}>
                Remove
              </button>
            </div>
            <SchemaFields fields={ruleFields(r.kind)} values={r} errors={errors.rules[i] ?? {}} onChange={(n, v) => setRule(i, n, v)} idPrefix={`rule-${i}`} />
          </section>
        ))}
      </div>
      <section className={`${cardCls} space-y-1 p-3`}>
        <label htmlFor="monitors-webhook" className="block text-sm font-medium">
          Webhook URL
        </label>
        <input
          id="monitors-webhook"
          className={`${inputCls} w-full max-w-xl`}
          placeholder="none (http:// or https://; receives a JSON POST per alert)"
          value={draft.webhookUrl}
          aria-invalid={errors.webhookUrl ? true : undefined}
          onChange={(e) => setWebhook(e.target.value)}
        />
        {errors.webhookUrl ? (
          <p className="text-xs text-red-600" role="alert" data-testid="error-webhookUrl">
            {errors.webhookUrl}
          </p>
        ) : null}
      </section>
      {errors.banner.length ? (
        <p className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
          {errors.banner.join("; ")}
        </p>
      ) : null}
      <div className="flex flex-wrap items-center gap-3">
        <button type="button" className={primaryBtnCls} onClick={save} disabled={saving}>
          {saving ? "Saving…" : "Save"}
        </button>
        <button type="button" className={btnCls} onClick={addRule} disabled={draft.rules.length >= 50}>
          Add a rule
        </button>
        <button type="button" className={btnCls} onClick={resetToDefaults}>
          Reset to defaults
        </button>
        {saved ? (
          <span className="text-sm text-emerald-700 dark:text-emerald-400" role="status">
            Saved.
          </span>
        ) : null}
      </div>
    </>
  );
}

"use client";
// Chooses whose advantages to show: the stored ones (as trained) or any lib/credit estimator,
// with its parameters as a form generated from the estimator's zod schema.
import { useEffect, useMemo, useState } from "react";
import { checkField, defaultsOf, schemaFields } from "@/lib/forms/schema-fields";
import { SchemaFields } from "@/components/forms/schema-form";
import { btnCls, inputCls } from "@/components/ui/controls";
import type { EstimatorInfo } from "@/lib/schemas/credit";
import type { CreditSource } from "@/lib/schemas/credit";

export function EstimatorPicker({
  id,
  label,
  catalog,
  trained,
  value,
  shownParams,
  fieldsAny,
  onChange,
  allowNone,
}: {
  id: string;
  label: string;
  catalog: EstimatorInfo[];
  /** the estimator stored with the step (used in training) */
  trained: string | null;
  value: CreditSource | null;
  /** the parsed params the server used (form values) */
  shownParams?: Record<string, unknown> | null;
  /** credit turn fields present on some turn of the data */
  fieldsAny?: string[];
  onChange: (v: CreditSource | null) => void;
  /** offer "none" (used by the second picker of a comparison) */
  allowNone?: boolean;
}) {
  const est = value?.estimator ? catalog.find((e) => e.id === value.estimator) : undefined;
  const fields = useMemo(() => (est ? schemaFields(est.paramsSchema) : []), [est]);
  const [draft, setDraft] = useState<Record<string, unknown>>({});
  const [open, setOpen] = useState(false);
  // The form shows what the server computed with (defaults or training params filled in).
  useEffect(() => setDraft({ ...defaultsOf(fields), ...(shownParams ?? {}), ...(value?.params ?? {}) }), [fields, shownParams, value?.params]);
  const dirty = est && JSON.stringify(draft) !== JSON.stringify({ ...defaultsOf(fields), ...(shownParams ?? {}), ...(value?.params ?? {}) });
  const invalid = fields.some((f) => checkField(f, draft[f.name]));
  const missing = (e: EstimatorInfo) => (fieldsAny ? e.needs.filter((f) => !fieldsAny.includes(f)) : []);
  const selectValue = value === null ? "none" : (value.estimator ?? "stored");
  // A trainer's estimator TurnLens has no equivalent of is stored as "<trainer>:<name>" (e.g. verl:gae).
  const foreign = (trained ?? "").split(", ").filter((t) => t && !catalog.some((e) => e.id === t));
  return (
    <div className="space-y-2">
      <div className="flex flex-wrap items-center gap-2">
        <label htmlFor={`${id}-est`} className="text-sm text-zinc-600 dark:text-zinc-400">
          {label}
        </label>
        <select
          id={`${id}-est`}
          className={inputCls}
          value={selectValue}
          data-testid={`${id}-estimator`}
          onChange={(e) => {
            const v = e.target.value;
            onChange(v === "none" ? null : v === "stored" ? {} : { estimator: v });
          }}
        >
          {allowNone ? <option value="none">none</option> : null}
          <option value="stored">stored advantages (as trained{trained ? `: ${trained}` : ""})</option>
          {catalog.map((e) => {
            const m = missing(e);
            return (
              <option key={e.id} value={e.id}>
                {e.id} — {e.title}
                {m.length ? ` (needs ${m.join(", ")})` : ""}
              </option>
            );
          })}
        </select>
        {est ? (
          <button type="button" className={btnCls} aria-expanded={open} aria-controls={`${id}-params`} onClick={() => setOpen((o) => !o)}>
            {open ? "Hide" : "Edit"} parameters
          </button>
        ) : null}
        {est ? (
          <a
            href={est.paper.url}
            target="_blank"
            rel="noreferrer"
            className="text-xs text-indigo-600 hover:underline dark:text-indigo-400"
            title={est.paper.title}
          >
            paper ({est.paper.year})
          </a>
        ) : null}
      </div>
      {foreign.length ? (
        <p className="text-xs text-amber-700 dark:text-amber-400" data-testid="foreign-estimator">
          Trained with {foreign.join(", ")}, which TurnLens has no equivalent of: the stored advantages are the trainer&apos;s own and cannot be recomputed as
          trained; the estimators above recompute with TurnLens&apos;s semantics.
        </p>
      ) : null}
      {est && open ? (
        <form
          id={`${id}-params`}
          className="rounded-md border border-zinc-200 p-3 dark:border-zinc-800"
          onSubmit={(e) => {
            e.preventDefault();
            if (!invalid) onChange({ estimator: est.id, params: draft });
          }}
        >
          {fields.length ? (
            <SchemaFields idPrefix={id} fields={fields} values={draft} errors={{}} onChange={(k, v) => setDraft((d) => ({ ...d, [k]: v }))} />
          ) : (
            <p className="text-sm text-zinc-500">{est.id} has no parameters.</p>
          )}
          <div className="mt-3 flex gap-2">
            <button type="submit" className={btnCls} disabled={!dirty || invalid}>
              Recompute
            </button>
            <button type="button" className={btnCls} onClick={() => onChange({ estimator: est.id, params: defaultsOf(fields) })}>
              Reset to defaults
            </button>
          </div>
        </form>
      ) : null}
    </div>
  );
}

"use client";
// Renders fields generated from a JSON Schema (lib/forms/schema-fields.ts) with inline errors.
// Nested objects and discriminated unions (the training job's `model` and `context`) get sub-forms:
// a select for the variant, then its own fields; "edit as JSON" swaps a sub-form for a JSON box,
// whose text, while it does not parse, is held as InvalidJson so the form cannot launch it.
import { useState } from "react";
import type { Field } from "@/lib/forms/schema-fields";
import { checkField, variantDefaults } from "@/lib/forms/schema-fields";
import { InvalidJson } from "@/lib/forms/validate";

const input = "w-full rounded-md border border-zinc-300 bg-white px-2.5 py-1.5 text-sm aria-[invalid]:border-red-500 dark:border-zinc-700 dark:bg-zinc-900";

type Props = {
  fields: Field[];
  values: Record<string, unknown>;
  /** errors by dotted field path ("model.layers") */
  errors: Record<string, string>;
  onChange: (name: string, value: unknown) => void;
  idPrefix: string;
  /** dotted path of these fields inside the section (nested sub-forms) */
  at?: string;
};

export function SchemaFields({ fields, values, errors, onChange, idPrefix, at = "" }: Props) {
  return (
    <div className="grid gap-4 sm:grid-cols-2">
      {fields.map((f) => (
        <FieldRow
          key={f.name}
          f={f}
          v={values?.[f.name]}
          errors={errors}
          onChange={(v) => onChange(f.name, v)}
          idPrefix={idPrefix}
          path={at ? `${at}.${f.name}` : f.name}
        />
      ))}
    </div>
  );
}

function FieldRow({
  f,
  v,
  errors,
  onChange,
  idPrefix,
  path,
}: {
  f: Field;
  v: unknown;
  errors: Record<string, string>;
  onChange: (v: unknown) => void;
  idPrefix: string;
  path: string;
}) {
  const id = `${idPrefix}-${path.replaceAll(".", "-")}`;
  const [asJson, setAsJson] = useState(false);
  const nested = f.kind === "object" || f.kind === "variant";
  const jsonMode = nested && (asJson || v instanceof InvalidJson);
  // in a JSON box, its sub-fields' errors show at the box ("turns: must be at most 64")
  const inner = jsonMode
    ? Object.entries(errors)
        .filter(([k]) => k.startsWith(`${path}.`))
        .map(([k, m]) => `${k.slice(path.length + 1)}: ${m}`)
        .join("; ")
    : "";
  const err = errors[path] ?? (v instanceof InvalidJson ? v.error : inner || checkField(f, v));
  const described = [f.help ? `${id}-help` : "", err ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  const common = { id, name: path, "aria-describedby": described, "aria-invalid": err ? true : undefined } as const;
  // top-level fields keep their old test ids (error-lr); nested ones are error-model-layers
  const testId =
    idPrefix === "job" || idPrefix === "env" || idPrefix === "top" ? `error-${path.replaceAll(".", "-")}` : `error-${idPrefix}-${path.replaceAll(".", "-")}`;
  return (
    <div className={f.kind === "json" || nested ? "sm:col-span-2" : ""}>
      <div className="mb-1 flex items-center gap-3">
        <label htmlFor={id} className="block text-sm font-medium">
          {f.name}
        </label>
        {nested ? (
          <button
            type="button"
            className="text-xs text-indigo-600 hover:underline dark:text-indigo-400"
            onClick={() => setAsJson((x) => !x)}
            aria-pressed={asJson}
            data-testid={`json-toggle-${path}`}
          >
            {asJson ? "edit as form" : "edit as JSON"}
          </button>
        ) : null}
      </div>
      {nested && !jsonMode ? (
        <NestedFields f={f} v={v} errors={errors} onChange={onChange} idPrefix={idPrefix} path={path} id={id} />
      ) : f.kind === "number" ? (
        <input
          {...common}
          type="number"
          step={f.integer ? 1 : "any"}
          min={f.min}
          max={f.max}
          className={input}
          value={typeof v === "number" && !Number.isNaN(v) ? v : ""}
          placeholder={f.nullable ? "none" : undefined}
          onChange={(e) => onChange(e.target.value === "" ? (f.nullable ? null : NaN) : Number(e.target.value))}
        />
      ) : f.kind === "boolean" ? (
        <input {...common} type="checkbox" className="size-4" checked={Boolean(v)} onChange={(e) => onChange(e.target.checked)} />
      ) : f.kind === "enum" ? (
        <select {...common} className={input} value={String(v ?? "")} onChange={(e) => onChange(e.target.value)}>
          {f.options.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      ) : f.kind === "string" ? (
        <input {...common} className={input} value={String(v ?? "")} onChange={(e) => onChange(e.target.value)} />
      ) : (
        <JsonBox common={common} v={v} onChange={onChange} />
      )}
      {f.help ? (
        <p className="mt-1 text-xs text-zinc-500" id={`${id}-help`}>
          {f.help}
        </p>
      ) : null}
      {err && (!nested || jsonMode || errors[path]) ? (
        <p className="mt-1 text-xs text-red-600" role="alert" id={`${id}-error`} data-testid={testId}>
          {err}
        </p>
      ) : null}
    </div>
  );
}

/** A JSON box: its own text, parsed on every keystroke; unparseable text becomes InvalidJson. */
function JsonBox({ common, v, onChange }: { common: Record<string, unknown>; v: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(() => (v instanceof InvalidJson ? v.text : JSON.stringify(v ?? null, null, 1)));
  return (
    <textarea
      {...common}
      rows={3}
      className={`${input} font-mono`}
      value={text}
      onChange={(e) => {
        setText(e.target.value);
        try {
          onChange(JSON.parse(e.target.value));
        } catch (err) {
          onChange(new InvalidJson(e.target.value, `not valid JSON (${(err as Error).message.replace(/^JSON\.parse: /, "")}): fix it or undo the edit`));
        }
      }}
    />
  );
}

function NestedFields({
  f,
  v,
  errors,
  onChange,
  idPrefix,
  path,
  id,
}: {
  f: Field;
  v: unknown;
  errors: Record<string, string>;
  onChange: (v: unknown) => void;
  idPrefix: string;
  path: string;
  id: string;
}) {
  const obj = (v && typeof v === "object" ? v : {}) as Record<string, unknown>;
  const set = (k: string, x: unknown) => onChange({ ...obj, [k]: x });
  const box = "rounded-md border border-zinc-200 p-3 dark:border-zinc-800";
  if (f.kind === "variant") {
    const tag = String(obj[f.discriminator] ?? f.variants[0].tag);
    const variant = f.variants.find((x) => x.tag === tag) ?? f.variants[0];
    return (
      <div className={box}>
        <label className="mb-1 block text-xs text-zinc-500" htmlFor={id}>
          {f.discriminator}
        </label>
        <select
          id={id}
          name={`${path}.${f.discriminator}`}
          className={`${input} mb-3 sm:w-60`}
          value={tag}
          onChange={(e) => onChange(variantDefaults(f, e.target.value))}
        >
          {f.variants.map((x) => (
            <option key={x.tag} value={x.tag}>
              {x.tag}
            </option>
          ))}
        </select>
        {variant.fields.length ? (
          <SchemaFields fields={variant.fields} values={obj} errors={errors} onChange={set} idPrefix={idPrefix} at={path} />
        ) : (
          <p className="text-xs text-zinc-500">No parameters.</p>
        )}
      </div>
    );
  }
  if (f.kind !== "object") return null;
  const on = v !== null && v !== undefined;
  return (
    <div className={box}>
      {f.nullable ? (
        <label className="mb-2 flex items-center gap-2 text-sm">
          <input
            id={id}
            type="checkbox"
            className="size-4"
            checked={on}
            onChange={(e) =>
              onChange(e.target.checked ? Object.fromEntries(f.fields.map((x) => [x.name, x.default]).filter(([, d]) => d !== undefined)) : null)
            }
          />
          use {f.name}
        </label>
      ) : null}
      {on ? <SchemaFields fields={f.fields} values={obj} errors={errors} onChange={set} idPrefix={idPrefix} at={path} /> : null}
    </div>
  );
}

"use client";
// The launch form of the `trainer` kind: a template of the operator's TURNLENS_TRAINERS file and a
// form made from its params (JSON Schema from the server, the same schema fields as every kind).
// The body carries only the template id and the params: the command stays in the operator's file.
// Checked in the browser on every edit (the server's launch schema and the template's params
// schema); the server's issues land on their fields.
import { useMemo, useState } from "react";
import { useRouter } from "next/navigation";
import { useMutation } from "@tanstack/react-query";
import { ApiClientError, callRoute, type RouteBody } from "@/lib/client/api";
import { routes } from "@/lib/queries";
import { defaultsOf, schemaFields, type JsonSchema } from "@/lib/forms/schema-fields";
import { addError, issuePathKey, plainIssue, plainMessage, zodFromJsonSchema, type FieldErrors } from "@/lib/forms/validate";
import { launchRunSchema } from "@/lib/schemas/runs";
import { SchemaFields } from "@/components/forms/schema-form";
import { primaryBtnCls } from "@/components/ui/controls";
import { TextField, type LaunchPrefill } from "./launch-form";

export interface TrainerOption {
  id: string;
  title: string;
  description: string;
  paramsSchema: JsonSchema;
}

const inputCls = "w-full rounded-md border border-zinc-300 bg-white px-2.5 py-1.5 text-sm dark:border-zinc-700 dark:bg-zinc-900";
const card = "rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900";

function useTrainerLaunch(trainers: TrainerOption[], prefill?: LaunchPrefill) {
  const router = useRouter();
  const [templateId, setTemplateId] = useState(() => {
    const want = prefill?.config.template;
    return trainers.some((t) => t.id === want) ? (want as string) : trainers[0].id;
  });
  const template = trainers.find((t) => t.id === templateId)!;
  const fields = useMemo(() => schemaFields(template.paramsSchema), [template]);
  const [params, setParams] = useState<Record<string, unknown>>(() => ({
    ...defaultsOf(fields),
    ...(prefill?.config.template === templateId ? ((prefill.config.params as object) ?? {}) : {}),
  }));
  const [name, setName] = useState(prefill ? `${prefill.name}-clone` : "");
  const [tags, setTags] = useState((prefill?.tags ?? []).join(", "));
  const [serverErrors, setServerErrors] = useState<FieldErrors>({});
  const [banner, setBanner] = useState<string[]>([]);
  const body = {
    jobKind: "trainer",
    name: name.trim() || undefined,
    tags: tags
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean),
    parentRunId: prefill?.parentRunId,
    config: { template: templateId, params },
  };
  const paramsZod = useMemo(() => zodFromJsonSchema(template.paramsSchema), [template]);
  const errs: FieldErrors = {};
  const clientBanner: string[] = [];
  const parsed = launchRunSchema.safeParse(body);
  if (!parsed.success) for (const i of parsed.error.issues) addError(errs, issuePathKey(i.path as (string | number)[]), plainIssue(i), clientBanner);
  const p = paramsZod.safeParse(params);
  if (!p.success)
    for (const i of p.error.issues) addError(errs, issuePathKey(["config", "params", ...(i.path as (string | number)[])]), plainIssue(i), clientBanner);
  const invalid = clientBanner.length > 0 || Object.values(errs).some((e) => Object.keys(e).length);
  const launch = useMutation({
    mutationFn: () => callRoute(routes.runsLaunch, { body: body as RouteBody<typeof routes.runsLaunch> }),
    onSuccess: (run) => router.push(`/runs/${run.id}`),
    onError: (err) => {
      if (!(err instanceof ApiClientError)) return;
      const next: FieldErrors = {};
      const b: string[] = [];
      for (const i of err.issues) addError(next, issuePathKey(i.path), plainMessage(i.message), b);
      setServerErrors(next);
      setBanner(b);
    },
  });
  const pickTemplate = (id: string) => {
    setTemplateId(id);
    setParams(defaultsOf(schemaFields(trainers.find((t) => t.id === id)!.paramsSchema)));
    setServerErrors({});
  };
  const errorsOf = (section: string) => ({ ...(serverErrors[section] ?? {}), ...(errs[section] ?? {}) });
  const edit = (k: string, v: unknown) => {
    setParams((s) => ({ ...s, [k]: v }));
    setServerErrors({});
  };
  return { templateId, template, fields, params, edit, pickTemplate, name, setName, tags, setTags, errorsOf, invalid, clientBanner, launch, banner };
}

/** Template, its params, name and tags, and Launch. `kindPicker`: the job-kind select of the launch form. */
export function TrainerLaunchForm({ trainers, prefill, kindPicker }: { trainers: TrainerOption[]; prefill?: LaunchPrefill; kindPicker?: React.ReactNode }) {
  const st = useTrainerLaunch(trainers, prefill);
  const top = st.errorsOf("top");
  return (
    <form
      className="space-y-6"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (!st.invalid) st.launch.mutate();
      }}
    >
      <section className={card}>
        {kindPicker}
        <label htmlFor="trainer-template" className="mb-1 block text-sm font-medium">
          Trainer template
        </label>
        <select id="trainer-template" value={st.templateId} onChange={(e) => st.pickTemplate(e.target.value)} className={`${inputCls} mb-2 sm:w-96`}>
          {trainers.map((t) => (
            <option key={t.id} value={t.id}>
              {t.title} ({t.id})
            </option>
          ))}
        </select>
        <p className="mb-4 text-sm text-zinc-500" data-testid="trainer-description">
          {st.template.description}
        </p>
        <div className="grid gap-4 sm:grid-cols-2">
          <TextField id="name" label="name" value={st.name} onChange={st.setName} placeholder="the template and the time" error={top.name} />
          <TextField id="tags" label="tags" value={st.tags} onChange={st.setTags} placeholder="comma separated" error={top.tags} />
        </div>
      </section>
      <section className={card} data-testid="section-Parameters">
        <h2 className="mb-3 font-medium">Parameters</h2>
        {st.fields.length ? (
          <SchemaFields idPrefix="param" fields={st.fields} values={st.params} errors={st.errorsOf("job")} onChange={st.edit} at="params" />
        ) : (
          <p className="text-sm text-zinc-500">This template has no parameters.</p>
        )}
        <p className="mt-3 text-xs text-zinc-500">The command is the operator&apos;s (TURNLENS_TRAINERS); each value fills in one argument.</p>
      </section>
      {st.launch.error ? (
        <div className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300" role="alert">
          {st.banner.length ? st.banner.join("; ") : st.launch.error.message}
        </div>
      ) : null}
      {st.invalid ? (
        <p className="text-sm text-red-600" data-testid="form-invalid">
          Fix the marked field(s) to launch{st.clientBanner.length ? `: ${st.clientBanner.join("; ")}` : "."}
        </p>
      ) : null}
      <button type="submit" disabled={st.launch.isPending || st.invalid} className={primaryBtnCls}>
        {st.launch.isPending ? "Launching…" : "Launch run"}
      </button>
    </form>
  );
}

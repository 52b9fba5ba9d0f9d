"use client";
// Launch form generated from the zod schemas (via JSON Schema): job kind, environment and their
// parameters with defaults and help text; when the job kind's config has an `estimator`, an
// estimator selector and its parameters from the lib/credit registry. Fields sit in titled
// sections (lib/forms/launch-layout.ts), advanced ones folded. The body Launch would send is
// checked in the browser with the server's zod schema on every edit (lib/forms/validate.ts), so
// Launch is disabled while anything on screen is invalid; server errors land at their field too.
// "Clone and edit" arrives here prefilled.
import { useMemo, useState } from "react";
import { useRouter } from "next/navigation";
import { useMutation } from "@tanstack/react-query";
import { ApiClientError, callRoute, type RouteBody } from "@/lib/client/api";
import { routes } from "@/lib/queries";
import { defaultsOf, schemaFields, type Field, type JsonSchema } from "@/lib/forms/schema-fields";
import { addError, invalidJsonPaths, issuePathKey, plainIssue, plainMessage, zodFromJsonSchema, type FieldErrors } from "@/lib/forms/validate";
import { layOut } from "@/lib/forms/launch-layout";
import { launchRunSchema } from "@/lib/schemas/runs";
import { SchemaFields } from "@/components/forms/schema-form";
import type { EstimatorInfo } from "@/lib/schemas/credit";
import { ESTIMATOR_KEYS, estimatorParamFields, estimatorParamValues, estimatorSection } from "./launch-estimators";
import { TrainerLaunchForm, type TrainerOption } from "./launch-trainer";
import { SweepBlock, useSweepForm } from "./sweep-block";

export interface LaunchCatalog {
  envs: { id: string; title: string; description: string; configSchema: JsonSchema }[];
  jobKinds: { id: string; title: string; description: string; configSchema: JsonSchema }[];
  /** the operator's trainer templates (the `trainer` kind is offered only with some) */
  trainers?: TrainerOption[];
}

export interface LaunchPrefill {
  jobKind: string;
  config: Record<string, unknown>;
  name: string;
  tags: string[];
  parentRunId: string;
  /** a note shown above the form (e.g. what a clone of an imported run carries over) */
  note?: string;
}

const inputCls = "w-full rounded-md border border-zinc-300 bg-white px-2.5 py-1.5 text-sm dark:border-zinc-700 dark:bg-zinc-900";
const card = "rounded-lg border border-zinc-200 bg-white p-4 dark:border-zinc-800 dark:bg-zinc-900";

export function LaunchForm({ catalog, estimators = [], prefill }: { catalog: LaunchCatalog; estimators?: EstimatorInfo[]; prefill?: LaunchPrefill }) {
  const [jobId, setJobId] = useState(() => (catalog.jobKinds.some((j) => j.id === prefill?.jobKind) ? prefill!.jobKind : catalog.jobKinds[0].id));
  const job = catalog.jobKinds.find((j) => j.id === jobId)!;
  if (job.id === "trainer" && catalog.trainers?.length)
    return (
      <TrainerLaunchForm
        key={job.id}
        trainers={catalog.trainers}
        prefill={prefill?.jobKind === "trainer" ? prefill : undefined}
        kindPicker={<JobKindPicker catalog={catalog} job={job} pickJob={catalog.jobKinds.length > 1 ? setJobId : undefined} />}
      />
    );
  return (
    <LaunchFormFor
      key={job.id}
      catalog={catalog}
      estimators={estimators}
      job={job}
      prefill={prefill?.jobKind === job.id ? prefill : prefill && { ...prefill, config: { envId: prefill.config.envId } }}
      pickJob={catalog.jobKinds.length > 1 ? setJobId : undefined}
    />
  );
}

type JobKind = LaunchCatalog["jobKinds"][number];

/**
 * The form's state: job, environment and estimator values, name and tags; the body Launch sends,
 * checked in the browser on every edit; the launch itself, whose server issues land on their fields.
 */
function useLaunchForm(catalog: LaunchCatalog, estimators: EstimatorInfo[], job: JobKind, prefill?: LaunchPrefill) {
  const router = useRouter();
  const estSection = useMemo(() => estimatorSection(job.configSchema, estimators), [job, estimators]);
  const jobFields = useMemo(() => schemaFields(job.configSchema, ["envId", "envConfig", ...ESTIMATOR_KEYS]), [job]);
  // Job kinds without an environment of their own (onnx-eval takes its source run's) skip that section.
  const hasEnv = Boolean(job.configSchema.properties?.envId);
  const [envId, setEnvId] = useState<string>(() => {
    // the clone's environment, else the job kind's default environment, else the first one
    const want = (prefill?.config.envId ?? job.configSchema.properties?.envId?.default) as string | undefined;
    return catalog.envs.some((e) => e.id === want) ? want! : catalog.envs[0]?.id;
  });
  const env = catalog.envs.find((e) => e.id === envId)!;
  const envFields = useMemo(() => schemaFields(env.configSchema), [env]);
  const [jobValues, setJobValues] = useState<Record<string, unknown>>(() => {
    const cfg = { ...(prefill?.config ?? {}) };
    for (const k of ["envId", "envConfig", ...ESTIMATOR_KEYS]) delete cfg[k];
    return { ...defaultsOf(jobFields), ...cfg };
  });
  const [envValues, setEnvValues] = useState<Record<string, unknown>>(() => ({ ...defaultsOf(envFields), ...((prefill?.config.envConfig as object) ?? {}) }));
  const [estId, setEstId] = useState<string | undefined>(() => {
    const want = prefill?.config.estimator;
    return estSection ? (estSection.options.some((o) => o.id === want) ? (want as string) : estSection.defaultId) : undefined;
  });
  const est = estSection?.options.find((o) => o.id === estId);
  const estFields = useMemo(() => estimatorParamFields(est), [est]);
  const [estValues, setEstValues] = useState<Record<string, unknown>>(() => estimatorParamValues(est, prefill?.config.estimatorParams));
  const [name, setName] = useState(prefill ? `${prefill.name}-clone` : "");
  const [tags, setTags] = useState((prefill?.tags ?? []).join(", "));
  // the server's field errors (from the last Launch), cleared as their section is edited
  const [errors, setErrors] = useState<FieldErrors>({});
  const [serverBanner, setServerBanner] = useState<string[]>([]);

  const pickEnv = (id: string) => {
    setEnvId(id);
    const e = catalog.envs.find((x) => x.id === id)!;
    setEnvValues(defaultsOf(schemaFields(e.configSchema)));
    setErrors({});
  };
  const pickEstimator = (id: string) => {
    setEstId(id);
    setEstValues(estimatorParamValues(estSection?.options.find((o) => o.id === id)));
    setErrors((e) => ({ ...e, est: {} }));
  };

  // The body exactly as it will be sent: what the checks below judge is what Launch sends.
  const body = {
    jobKind: job.id,
    name: name.trim() || undefined,
    tags: tags
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean),
    parentRunId: prefill?.parentRunId,
    config: { ...jobValues, ...(hasEnv ? { envId, envConfig: envValues } : {}), ...(estSection ? { estimator: estId, estimatorParams: estValues } : {}) },
  };
  const envZod = useMemo(() => zodFromJsonSchema(env.configSchema), [env]);
  const estZod = useMemo(() => (est ? zodFromJsonSchema(est.paramsSchema) : null), [est]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: body is rebuilt every render from the inputs listed
  const client = useMemo(() => {
    const errs: FieldErrors = {};
    const banner: string[] = [];
    for (const [path, msg] of invalidJsonPaths(body.config)) addError(errs, issuePathKey(["config", ...path.split(".")]), msg, banner);
    const parsed = launchRunSchema.safeParse(body);
    if (!parsed.success) for (const i of parsed.error.issues) addError(errs, issuePathKey(i.path as (string | number)[]), plainIssue(i), banner);
    if (hasEnv) {
      const r = envZod.safeParse(envValues);
      if (!r.success)
        for (const i of r.error.issues) addError(errs, issuePathKey(["config", "envConfig", ...(i.path as (string | number)[])]), plainIssue(i), banner);
    }
    if (estZod) {
      const r = estZod.safeParse(estValues);
      if (!r.success)
        for (const i of r.error.issues) addError(errs, issuePathKey(["config", "estimatorParams", ...(i.path as (string | number)[])]), plainIssue(i), banner);
    }
    return { errs, banner, invalid: banner.length > 0 || Object.values(errs).some((e) => Object.keys(e).length) };
  }, [jobValues, envValues, estValues, name, tags, envId, estId, job, envZod, estZod]);

  // sweep mode: the same body, launched for every grid point x seed (POST /sweeps)
  const sweep = useSweepForm(body);
  const launch = useMutation({
    // sent as built, checked or not: the server's issues land on the same fields as the checks above
    mutationFn: async () =>
      sweep.on && sweep.body
        ? `/sweeps/${(await callRoute(routes.sweepsLaunch, { body: sweep.body })).id}`
        : `/runs/${(await callRoute(routes.runsLaunch, { body: body as RouteBody<typeof routes.runsLaunch> })).id}`,
    onSuccess: (href) => router.push(href),
    onError: (err) => {
      if (!(err instanceof ApiClientError)) return;
      // Route each server issue to its field (body.config.model.layers -> Model section, model.layers).
      const next: FieldErrors = {};
      const banner: string[] = [];
      for (const i of err.issues) addError(next, issuePathKey(i.path), plainMessage(i.message), banner);
      setErrors(next);
      setServerBanner(banner);
    },
  });
  // a field's own check first, then what the server said about it (until the field changes)
  const errorsOf = (section: string) => ({ ...(errors[section] ?? {}), ...(client.errs[section] ?? {}) });
  const clientInvalid = client.invalid || sweep.errors.length > 0;
  const editJob = (k: string, v: unknown) => {
    setJobValues((s) => ({ ...s, [k]: v }));
    setErrors((e) => ({ ...e, job: {} }));
  };
  const editEnv = (k: string, v: unknown) => {
    setEnvValues((s) => ({ ...s, [k]: v }));
    setErrors((e) => ({ ...e, env: {} }));
  };
  const editEst = (k: string, v: unknown) => {
    setEstValues((s) => ({ ...s, [k]: v }));
    setErrors((e) => ({ ...e, est: {} }));
  };
  const editTop = (set: (v: string) => void) => (v: string) => {
    set(v);
    setErrors((x) => ({ ...x, top: {} }));
  };
  return {
    sections: layOut(job.id, jobFields, hasEnv, Boolean(estSection)),
    hasEnv,
    envId,
    env,
    envFields,
    envValues,
    pickEnv,
    editEnv,
    estSection,
    estId,
    est,
    estFields,
    estValues,
    pickEstimator,
    editEst,
    jobValues,
    editJob,
    name,
    setName: editTop(setName),
    tags,
    setTags: editTop(setTags),
    errorsOf,
    client,
    clientInvalid,
    launch,
    serverBanner,
    sweep,
  };
}
type LaunchState = ReturnType<typeof useLaunchForm>;

function LaunchFormFor({
  catalog,
  estimators,
  job,
  prefill,
  pickJob,
}: {
  catalog: LaunchCatalog;
  estimators: EstimatorInfo[];
  job: JobKind;
  prefill?: LaunchPrefill;
  pickJob?: (id: string) => void;
}) {
  const st = useLaunchForm(catalog, estimators, job, prefill);
  const fieldsGrid = (fields: Field[]) => (
    <SchemaFields idPrefix="job" fields={fields} values={st.jobValues} errors={st.errorsOf("job")} onChange={st.editJob} />
  );
  return (
    <form
      className="space-y-6"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (!st.clientInvalid) st.launch.mutate();
      }}
    >
      {prefill?.note ? <p className="rounded-md bg-amber-50 p-3 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200">{prefill.note}</p> : null}
      <RunIdentity catalog={catalog} job={job} pickJob={pickJob} st={st} />
      {st.sections.map((sec) => (
        <section key={sec.title} className={card} data-testid={`section-${sec.title}`}>
          <h2 className="mb-3 font-medium">{sec.title}</h2>
          {sec.slot === "env" && st.hasEnv ? <EnvironmentBlock catalog={catalog} st={st} /> : null}
          {sec.slot === "estimator" && st.estSection ? <EstimatorBlock st={st} /> : null}
          {sec.basic.length ? fieldsGrid(sec.basic) : null}
          {sec.advanced.length ? (
            // folded unless one of its fields has an error (a hidden error would block Launch silently)
            <details
              className="mt-4"
              open={sec.advanced.some((f) => Object.keys(st.errorsOf("job")).some((k) => k === f.name || k.startsWith(`${f.name}.`))) || undefined}
            >
              <summary className="cursor-pointer text-sm text-zinc-600 dark:text-zinc-400">
                Advanced ({sec.advanced.length}): {sec.advanced.map((f) => f.name).join(", ")}
              </summary>
              <div className="mt-3">{fieldsGrid(sec.advanced)}</div>
            </details>
          ) : null}
        </section>
      ))}
      <SweepBlock sw={st.sweep} />
      <LaunchStatus st={st} />
    </form>
  );
}

/** A one-line text input with its label and its error (name, tags). */
export function TextField({
  id,
  label,
  value,
  onChange,
  placeholder,
  error,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  placeholder: string;
  error?: string;
}) {
  return (
    <div>
      <label htmlFor={`run-${id}`} className="mb-1 block text-sm font-medium">
        {label}
      </label>
      <input
        id={`run-${id}`}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        placeholder={placeholder}
        className={inputCls}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `run-${id}-error` : undefined}
      />
      {error ? (
        <p id={`run-${id}-error`} className="mt-1 text-xs text-red-600" role="alert" data-testid={`error-${id}`}>
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** Job kind (when there is a choice), what it does, and the run's name and tags. */
function RunIdentity({ catalog, job, pickJob, st }: { catalog: LaunchCatalog; job: JobKind; pickJob?: (id: string) => void; st: LaunchState }) {
  const topErr = st.errorsOf("top");
  return (
    <section className={card}>
      <JobKindPicker catalog={catalog} job={job} pickJob={pickJob} />
      <div className="grid gap-4 sm:grid-cols-2">
        <TextField id="name" label="name" value={st.name} onChange={st.setName} placeholder="generated from the config" error={topErr.name} />
        <TextField id="tags" label="tags" value={st.tags} onChange={st.setTags} placeholder="comma separated" error={topErr.tags} />
      </div>
    </section>
  );
}

/** The job-kind select (when there is a choice), and what the kind does. */
function JobKindPicker({ catalog, job, pickJob }: { catalog: LaunchCatalog; job: JobKind; pickJob?: (id: string) => void }) {
  return (
    <>
      {pickJob ? (
        <div className="mb-3">
          <label htmlFor="job-kind" className="mb-1 block text-sm font-medium">
            Job kind
          </label>
          <select id="job-kind" value={job.id} onChange={(e) => pickJob(e.target.value)} className={`${inputCls} sm:w-80`}>
            {catalog.jobKinds.map((j) => (
              <option key={j.id} value={j.id}>
                {j.title} ({j.id})
              </option>
            ))}
          </select>
        </div>
      ) : null}
      <h2 className="mb-1 font-medium">{job.title}</h2>
      <p className="mb-4 text-sm text-zinc-500">{job.description}</p>
    </>
  );
}

function EnvironmentBlock({ catalog, st }: { catalog: LaunchCatalog; st: LaunchState }) {
  const { envId, env, envFields, envValues, pickEnv, editEnv, errorsOf } = st;
  return (
    <div className="mb-4">
      <label htmlFor="env-select" className="mb-1 block text-sm font-medium">
        Environment
      </label>
      <select id="env-select" value={envId} onChange={(e) => pickEnv(e.target.value)} className={`${inputCls} mb-2 sm:w-80`}>
        {catalog.envs.map((e) => (
          <option key={e.id} value={e.id}>
            {e.title} ({e.id})
          </option>
        ))}
      </select>
      <p className="mb-4 text-sm text-zinc-500">{env.description}</p>
      <SchemaFields idPrefix="env" fields={envFields} values={envValues} errors={errorsOf("env")} onChange={editEnv} />
    </div>
  );
}

function EstimatorBlock({ st }: { st: LaunchState }) {
  const { estSection, estId, est, estFields, estValues, pickEstimator, editEst, errorsOf } = st;
  if (!estSection) return null;
  return (
    <div data-testid="estimator-section">
      <label htmlFor="estimator-select" className="mb-1 block text-sm font-medium">
        Credit estimator
      </label>
      <select
        id="estimator-select"
        value={estId}
        onChange={(e) => pickEstimator(e.target.value)}
        className={`${inputCls} mb-1 sm:w-[32rem]`}
        aria-describedby="estimator-help"
      >
        {estSection.options.map((o) => (
          <option key={o.id} value={o.id}>
            {o.title} ({o.id})
          </option>
        ))}
      </select>
      <p id="estimator-help" className="mb-4 text-sm text-zinc-500">
        {estSection.help ? `${estSection.help} ` : ""}
        {est ? (
          <a href={est.paper.url} target="_blank" rel="noreferrer" className="text-indigo-600 hover:underline dark:text-indigo-400">
            {est.paper.title} ({est.paper.year})
          </a>
        ) : null}
        {est && est.needs.length > 1 ? <span> · needs per turn: {est.needs.join(", ")}</span> : null}
      </p>
      {errorsOf("est").estimator ? (
        <p className="mb-2 text-xs text-red-600" role="alert">
          {errorsOf("est").estimator}
        </p>
      ) : null}
      {estFields.length ? (
        <SchemaFields idPrefix="est" fields={estFields} values={estValues} errors={errorsOf("est")} onChange={editEst} />
      ) : (
        <p className="text-sm text-zinc-500">This estimator has no parameters.</p>
      )}
    </div>
  );
}

/** What blocks Launch (the browser's checks, the server's answer) and the button. */
function LaunchStatus({ st }: { st: LaunchState }) {
  const { launch, serverBanner, client, clientInvalid } = st;
  return (
    <>
      {launch.error && (!(launch.error instanceof ApiClientError) || serverBanner.length || !launch.error.issues.length) ? (
        <div
          className="rounded-md border border-red-300 bg-red-50 p-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950 dark:text-red-300"
          role="alert"
          data-testid="launch-error"
        >
          {serverBanner.length ? serverBanner.join("; ") : launch.error.message}
        </div>
      ) : null}
      {clientInvalid ? (
        <p className="text-sm text-red-600" data-testid="form-invalid">
          Fix the {Object.values(client.errs).reduce((n, e) => n + Object.keys(e).length, 0) || ""} marked field(s) to launch
          {client.banner.length ? `: ${client.banner.join("; ")}` : "."}
        </p>
      ) : null}
      <button
        type="submit"
        disabled={launch.isPending || clientInvalid}
        className="rounded-md bg-indigo-600 px-4 py-2 text-sm font-medium text-white hover:bg-indigo-500 disabled:opacity-50"
      >
        {launch.isPending ? "Launching…" : st.sweep.on ? `Launch sweep (${st.sweep.runs} runs)` : "Launch run"}
      </button>
    </>
  );
}

"use client";
// "Evaluate checkpoint" on a training run's page: pick one of its checkpoints (or the latest), the
// number of held-out tasks and whether to also sample k episodes per task (pass@k); Launch creates
// a checkpoint-eval run through POST /runs and opens it. The config is checked with the server's
// schema before it is sent; the server's own answer (e.g. a step without a checkpoint) shows here.
import { useMemo, useState } from "react";
import { useRouter } from "next/navigation";
import { useMutation, useQuery } from "@tanstack/react-query";
import { ApiClientError, callRoute } from "@/lib/client/api";
import { checkpointsQuery, routes } from "@/lib/queries";
import { checkpointEvalConfigSchema, type RunOut } from "@/lib/schemas/runs";
import { btnCls, cardCls, inputCls, primaryBtnCls } from "@/components/ui/controls";

export function CheckpointEvalPanel({ run }: { run: RunOut }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        className={btnCls}
        onClick={() => setOpen((o) => !o)}
        aria-expanded={open}
        aria-controls="checkpoint-eval-form"
        data-testid="evaluate-checkpoint"
      >
        Evaluate checkpoint
      </button>
      {open ? <CheckpointEvalForm run={run} onClose={() => setOpen(false)} /> : null}
    </>
  );
}

function CheckpointEvalForm({ run, onClose }: { run: RunOut; onClose: () => void }) {
  const router = useRouter();
  const { data } = useQuery(checkpointsQuery(run.id, run.status));
  // newest first
  const steps = useMemo(() => (data?.checkpoints ?? []).map((c) => c.step).reverse(), [data]);
  const trainEval = (run.config as { evalEpisodes?: unknown } | null)?.evalEpisodes;
  const [step, setStep] = useState<string>("");
  const [episodes, setEpisodes] = useState(String(typeof trainEval === "number" ? Math.min(trainEval, 100) : 100));
  const [greedy, setGreedy] = useState(true);
  const [sampled, setSampled] = useState(false);
  const [k, setK] = useState("4");
  const config = { sourceRunId: run.id, checkpointStep: step === "" ? null : Number(step), episodes: Number(episodes), greedy, sampled, k: Number(k) };
  const parsed = checkpointEvalConfigSchema.safeParse(config);
  const problems = parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".") || "config"}: ${i.message}`);
  const launch = useMutation({
    mutationFn: () => callRoute(routes.runsLaunch, { body: { jobKind: "checkpoint-eval", project: run.project, config } }),
    onSuccess: (created) => router.push(`/runs/${created.id}`),
  });
  const serverError = launch.error
    ? launch.error instanceof ApiClientError && launch.error.issues.length
      ? launch.error.issues.map((i) => `${i.path}: ${i.message}`).join("; ")
      : launch.error.message
    : null;
  const field = "flex flex-col gap-1 text-sm";

  return (
    <form
      id="checkpoint-eval-form"
      className={`${cardCls} absolute right-0 top-full z-10 mt-2 w-80 space-y-3 p-4 shadow-lg`}
      aria-label="Evaluate a checkpoint"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (parsed.success) launch.mutate();
      }}
    >
      <p className="text-xs text-zinc-500">
        Plays this run&apos;s held-out tasks with the checkpoint&apos;s weights in the PyTorch engine (the worker&apos;s GPU where it has one).
      </p>
      <label className={field}>
        Checkpoint
        <select className={inputCls} value={step} onChange={(e) => setStep(e.target.value)} data-testid="checkpoint-step">
          <option value="">latest</option>
          {steps.map((s) => (
            <option key={s} value={String(s)}>
              step {s}
            </option>
          ))}
        </select>
      </label>
      <label className={field}>
        Held-out tasks
        <input className={inputCls} type="number" min={1} value={episodes} onChange={(e) => setEpisodes(e.target.value)} data-testid="checkpoint-episodes" />
      </label>
      <div className="flex flex-wrap gap-4 text-sm">
        <label className="flex items-center gap-1.5">
          <input type="checkbox" checked={greedy} onChange={(e) => setGreedy(e.target.checked)} /> greedy
        </label>
        <label className="flex items-center gap-1.5">
          <input type="checkbox" checked={sampled} onChange={(e) => setSampled(e.target.checked)} data-testid="checkpoint-sampled" /> sampled (pass@k)
        </label>
      </div>
      {sampled ? (
        <label className={field}>
          k (samples per task)
          <input className={inputCls} type="number" min={1} value={k} onChange={(e) => setK(e.target.value)} data-testid="checkpoint-k" />
        </label>
      ) : null}
      {problems.length ? (
        <p className="text-xs text-red-600" role="alert">
          {problems.join("; ")}
        </p>
      ) : null}
      {serverError ? (
        <p className="text-xs text-red-600" role="alert" data-testid="checkpoint-eval-error">
          {serverError}
        </p>
      ) : null}
      <div className="flex justify-end gap-2">
        <button type="button" className={btnCls} onClick={onClose}>
          Close
        </button>
        <button type="submit" className={primaryBtnCls} disabled={!parsed.success || launch.isPending}>
          {launch.isPending ? "Launching…" : "Launch evaluation"}
        </button>
      </div>
    </form>
  );
}

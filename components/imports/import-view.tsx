"use client";
// The upload page: pick a format, project and run name, upload a file (XHR, with progress), then
// follow the import job (`?job=<id>` in the URL): progress, live log, and at the end rows imported,
// rows rejected with reasons, and links to the runs it made. Parsing is the Python importers' job.
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { callRoute, uploadRoute, type ApiClientError } from "@/lib/client/api";
import { importQuery, recentImportsQuery, routes } from "@/lib/queries";
import { IMPORT_FORMATS, type ImportFormat } from "@/lib/schemas/imports";
import { StatusBadge } from "@/components/ui/status-badge";
import { ProgressBar } from "@/components/ui/progress-bar";
import { btnCls, cardCls, inputCls, labelCls, primaryBtnCls } from "@/components/ui/controls";
import { JobLog } from "@/components/runs/job-log";

const FORMATS = Object.entries(IMPORT_FORMATS) as [ImportFormat, (typeof IMPORT_FORMATS)[ImportFormat]][];

/** A browser file name as the API takes it: letters, digits, _ . + - only. */
const safeName = (n: string) =>
  n
    .replace(/[^A-Za-z0-9_.+-]/g, "_")
    .replace(/^[.+-]+/, "")
    .slice(0, 200) || "upload";

function fmtBytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 ** 2 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 ** 2).toFixed(1)} MB`;
}

export function ImportView({ maxUploadBytes }: { maxUploadBytes: number }) {
  const router = useRouter();
  const jobId = useSearchParams().get("job");
  return (
    <div className="space-y-6">
      <UploadForm maxUploadBytes={maxUploadBytes} onQueued={(id) => router.replace(`/import?job=${encodeURIComponent(id)}`)} />
      {jobId ? <ImportStatus id={jobId} /> : null}
      <RecentImports current={jobId} />
    </div>
  );
}

function UploadForm({ maxUploadBytes, onQueued }: { maxUploadBytes: number; onQueued: (id: string) => void }) {
  const [format, setFormat] = useState<ImportFormat>("verl");
  const [project, setProject] = useState("default");
  const [name, setName] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [sent, setSent] = useState<number | null>(null);
  const [error, setError] = useState<ApiClientError | null>(null);
  const qc = useQueryClient();
  const tooBig = file !== null && file.size > maxUploadBytes;

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    if (!file || tooBig) return;
    setError(null);
    setSent(0);
    try {
      const imp = await uploadRoute(
        routes.importUpload,
        file,
        { query: { format, project: project.trim() || "default", name: name.trim() || undefined, filename: safeName(file.name) } },
        setSent,
      );
      qc.invalidateQueries({ queryKey: ["imports"] });
      onQueued(imp.id);
    } catch (err) {
      setError(err as ApiClientError);
    } finally {
      setSent(null);
    }
  }

  return (
    <form onSubmit={submit} className={`${cardCls} space-y-4 p-4`} aria-label="Upload a file to import">
      <fieldset className="space-y-2">
        <legend className={labelCls}>Format</legend>
        <div className="grid gap-2 sm:grid-cols-2">
          {FORMATS.map(([id, f]) => (
            <label
              key={id}
              className={`flex cursor-pointer gap-2 rounded-md border p-2 text-sm ${format === id ? "border-indigo-500 bg-indigo-50 dark:bg-indigo-950/40" : "border-zinc-200 dark:border-zinc-800"}`}
            >
              <input type="radio" name="format" value={id} checked={format === id} onChange={() => setFormat(id)} className="mt-0.5" />
              <span>
                <span className="font-medium">{f.title}</span>
                <span className="block text-xs text-zinc-500">{f.accepts}</span>
              </span>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="grid gap-3 sm:grid-cols-2">
        <label className="space-y-1">
          <span className={labelCls}>Project</span>
          <input className={`${inputCls} w-full`} value={project} onChange={(e) => setProject(e.target.value)} maxLength={100} required />
        </label>
        <label className="space-y-1">
          <span className={labelCls}>Run name</span>
          <input
            className={`${inputCls} w-full`}
            value={name}
            onChange={(e) => setName(e.target.value)}
            maxLength={200}
            placeholder="from the files"
            aria-describedby="run-name-help"
          />
          <span id="run-name-help" className="block text-xs text-zinc-500">
            Used when the upload holds one run; a log dir or store of several keeps their own names.
          </span>
        </label>
      </div>
      <label className="block space-y-1">
        <span className={labelCls}>File</span>
        <input
          type="file"
          aria-label="File to upload"
          className="block w-full text-sm file:mr-3 file:rounded-md file:border-0 file:bg-zinc-100 file:px-3 file:py-1.5 file:text-sm dark:file:bg-zinc-800 dark:file:text-zinc-200"
          onChange={(e) => setFile(e.target.files?.[0] ?? null)}
          required
        />
        <span className="block text-xs text-zinc-500">
          {file ? `${file.name}, ${fmtBytes(file.size)}. ` : ""}At most {fmtBytes(maxUploadBytes)}; archives (.tar, .tar.gz, .zip) are extracted safely on the
          server.
        </span>
        {tooBig ? <span className="block text-xs text-red-600">This file is larger than the server&apos;s upload limit (TURNLENS_MAX_UPLOAD_MB).</span> : null}
      </label>
      {sent !== null ? <ProgressBar value={sent} label="upload progress" /> : null}
      {error ? (
        <div
          className="rounded-md border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950/40 dark:text-red-300"
          role="alert"
        >
          {error.message}
          {error.issues?.length ? (
            <ul className="ml-4 list-disc text-xs">
              {error.issues.map((i) => (
                <li key={i.path}>
                  {i.path}: {i.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      <button type="submit" className={primaryBtnCls} disabled={!file || tooBig || sent !== null}>
        {sent !== null ? "Uploading…" : "Upload and import"}
      </button>
    </form>
  );
}

function ImportStatus({ id }: { id: string }) {
  const qc = useQueryClient();
  const { data: imp, error } = useQuery(importQuery(id));
  const live = imp?.job.status === "queued" || imp?.job.status === "running";
  const wasLive = useRef(live);
  useEffect(() => {
    if (wasLive.current && !live) qc.invalidateQueries({ queryKey: ["imports"] });
    wasLive.current = live;
  }, [live, qc]);
  const cancel = useMutation({
    mutationFn: () => callRoute(routes.importCancel, { params: { id }, body: {} }),
    onSettled: () => qc.invalidateQueries({ queryKey: ["import", id] }),
  });
  if (error)
    return (
      <p className="text-sm text-red-600">
        Could not load import {id}: {error.message}
      </p>
    );
  if (!imp) return <p className="text-sm text-zinc-500">Loading import…</p>;
  const r = imp.report;
  return (
    <section className={`${cardCls} space-y-4 p-4`} aria-label="Import" data-testid="import-status">
      <div className="flex flex-wrap items-center gap-3">
        <h2 className="font-medium">
          {imp.filename}{" "}
          <span className="text-sm font-normal text-zinc-500">
            ({IMPORT_FORMATS[imp.format].title}, {fmtBytes(imp.bytes)}, project {imp.project})
          </span>
        </h2>
        <StatusBadge status={imp.job.status} />
        {live ? (
          <button type="button" className={`${btnCls} ml-auto`} onClick={() => cancel.mutate()} disabled={cancel.isPending || imp.job.cancelRequested}>
            {imp.job.cancelRequested ? "Canceling…" : "Cancel"}
          </button>
        ) : null}
      </div>
      {live ? (
        <div className="space-y-1">
          <ProgressBar value={imp.job.progress} label="import progress" />
          <p className="text-xs text-zinc-500">{imp.job.progressMessage || (imp.job.status === "queued" ? "waiting for a worker" : "")}</p>
        </div>
      ) : null}
      {imp.job.error ? (
        <p
          className="rounded-md border border-red-300 bg-red-50 p-2 text-sm text-red-800 dark:border-red-900 dark:bg-red-950/40 dark:text-red-300"
          role="alert"
          data-testid="import-error"
        >
          {imp.job.error}
        </p>
      ) : null}
      {r ? (
        <div className="space-y-3" data-testid="import-report">
          <dl className="grid grid-cols-2 gap-3 text-center sm:grid-cols-4">
            {(
              [
                ["imported", "rows imported", r.imported, "text-emerald-700 dark:text-emerald-400"],
                ["already", "already present", r.alreadyPresent, "text-zinc-700 dark:text-zinc-300"],
                ["replaced", "values replaced", r.replaced ?? 0, "text-zinc-700 dark:text-zinc-300"],
                ["rejected", "rows rejected", r.rejected, r.rejected ? "text-red-700 dark:text-red-400" : "text-zinc-700 dark:text-zinc-300"],
              ] as const
            ).map(([id, label, n, cls]) => (
              <div key={id} className="rounded-md bg-zinc-50 p-2 dark:bg-zinc-950">
                <dd className={`text-2xl font-semibold tabular-nums ${cls}`} data-testid={`count-${id}`}>
                  {n.toLocaleString()}
                </dd>
                <dt className="text-xs text-zinc-500">{label}</dt>
              </div>
            ))}
          </dl>
          <table className="w-full text-sm">
            <thead className="text-left text-xs text-zinc-500">
              <tr>
                <th className="py-1 font-medium">Run</th>
                <th className="font-medium">Source</th>
                <th className="text-right font-medium">Imported</th>
                <th className="text-right font-medium">Already present</th>
                <th className="text-right font-medium" title="A later value at the same step replaced an earlier one">
                  Replaced
                </th>
                <th className="text-right font-medium">Rejected</th>
              </tr>
            </thead>
            <tbody>
              {r.runs.map((run) => (
                <tr key={run.runId} className="border-t border-zinc-100 dark:border-zinc-800">
                  <td className="py-1">
                    <Link href={`/runs/${run.runId}`} className="text-indigo-600 hover:underline dark:text-indigo-400">
                      {run.name}
                    </Link>
                    {run.created ? null : <span className="ml-2 text-xs text-zinc-500">(existing run)</span>}
                  </td>
                  <td className="font-mono text-xs text-zinc-500">{run.source}</td>
                  <td className="text-right tabular-nums">{run.imported}</td>
                  <td className="text-right tabular-nums">{run.alreadyPresent}</td>
                  <td className="text-right tabular-nums">{run.replaced ?? 0}</td>
                  <td className="text-right tabular-nums">{run.rejected}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {r.rejectedRows.length ? (
            <details open={r.rejectedRows.length <= 10}>
              <summary className="cursor-pointer text-sm font-medium">
                Rejected rows{r.rejected > r.rejectedRows.length ? ` (first ${r.rejectedRows.length} of ${r.rejected})` : ""}
              </summary>
              <ul className="mt-2 space-y-1 font-mono text-xs" data-testid="rejected-rows">
                {r.rejectedRows.map((x, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: a finished import's report, never reordered
                  <li key={i}>
                    <span className="text-zinc-500">{x.where}</span> {x.reason}
                  </li>
                ))}
              </ul>
            </details>
          ) : null}
        </div>
      ) : null}
      <details open={live || imp.job.status === "failed"}>
        <summary className="cursor-pointer text-sm font-medium">Log</summary>
        <div className="mt-2">
          <JobLog jobId={id} live={live} />
        </div>
      </details>
    </section>
  );
}

function RecentImports({ current }: { current: string | null }) {
  const { data } = useQuery(recentImportsQuery());
  if (!data?.imports.length) return null;
  return (
    <section className="space-y-2">
      <h2 className={labelCls}>Recent imports</h2>
      <ul className={`${cardCls} divide-y divide-zinc-100 text-sm dark:divide-zinc-800`} data-testid="recent-imports">
        {data.imports.map((i) => (
          <li key={i.id} className={`flex items-center gap-3 px-3 py-1.5 ${i.id === current ? "bg-indigo-50 dark:bg-indigo-950/40" : ""}`}>
            <StatusBadge status={i.job.status} />
            <Link href={`/import?job=${i.id}`} className="text-indigo-600 hover:underline dark:text-indigo-400">
              {i.filename}
            </Link>
            <span className="text-xs text-zinc-500">
              {IMPORT_FORMATS[i.format].title} · {i.project}
              {i.report ? ` · ${i.report.imported.toLocaleString()} imported, ${i.report.rejected.toLocaleString()} rejected` : ""}
            </span>
            <span className="ml-auto text-xs text-zinc-500">{new Date(i.job.createdAt).toLocaleString()}</span>
          </li>
        ))}
      </ul>
    </section>
  );
}

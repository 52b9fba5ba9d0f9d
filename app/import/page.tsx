import { Suspense } from "react";
import { ImportView } from "@/components/imports/import-view";
import { maxUploadBytes } from "@/lib/runs/imports";

export const dynamic = "force-dynamic";
export const metadata = { title: "Import runs" };

/** Upload another trainer's files (verl, TensorBoard, MLflow, generic JSONL); the import runs as a job. */
export default function ImportPage() {
  return (
    <div className="mx-auto max-w-4xl space-y-4">
      <div>
        <h1 className="text-xl font-semibold tracking-tight">Import runs</h1>
        <p className="text-sm text-zinc-500">
          Upload what another trainer wrote to disk. The Python client&apos;s importers read it on a worker (the same ones as <code>turnlens import</code>);
          rows that cannot be read are listed with the reason.
        </p>
      </div>
      <Suspense>
        <ImportView maxUploadBytes={maxUploadBytes()} />
      </Suspense>
    </div>
  );
}

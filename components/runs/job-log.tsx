"use client";
// Live job log: polls only the lines after the last one it has (cursor), follows the tail.
import { useEffect, useRef, useState } from "react";
import { callRoute } from "@/lib/client/api";
import { routes } from "@/lib/queries";
import type { LogLines } from "@/lib/schemas/jobs";

export function JobLog({ jobId, live }: { jobId: string; live: boolean }) {
  const [lines, setLines] = useState<LogLines["lines"]>([]);
  const [error, setError] = useState<string | null>(null);
  const cursor = useRef(-1);
  const box = useRef<HTMLPreElement>(null);

  useEffect(() => {
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      try {
        const res = await callRoute(routes.jobLog, { params: { id: jobId }, query: { after: cursor.current } });
        if (stop) return;
        if (res.lines.length) {
          cursor.current = res.next;
          setLines((prev) => prev.concat(res.lines).slice(-5000));
        }
        setError(null);
        // Drain quickly while there is backlog; otherwise poll only while the job is live.
        if (res.lines.length >= 500) timer = setTimeout(poll, 0);
        else if (live) timer = setTimeout(poll, 1000);
      } catch (e) {
        if (!stop) setError(String((e as Error).message));
        if (live && !stop) timer = setTimeout(poll, 3000);
      }
    };
    poll();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [jobId, live]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each new batch of lines, to follow the tail
  useEffect(() => {
    const el = box.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 80) el.scrollTop = el.scrollHeight;
  }, [lines]);

  return (
    <div>
      {error ? <p className="text-xs text-red-600">{error}</p> : null}
      {/* biome-ignore lint/a11y/useSemanticElements: a region, so that its label is read; the box keeps its own element for its formatting */}
      <pre
        ref={box}
        className="h-64 overflow-auto rounded-md bg-zinc-950 p-3 font-mono text-xs leading-5 text-zinc-200"
        data-testid="job-log"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable box takes focus so that it can be scrolled from the keyboard
        tabIndex={0}
        role="region"
        aria-label="Job log"
      >
        {lines.length === 0 ? <span className="text-zinc-500">No log lines yet.</span> : null}
        {lines.map((l) => (
          <div key={l.seq} className={l.level === "error" ? "text-red-400" : l.level === "warn" ? "text-amber-300" : undefined}>
            <span className="select-none text-zinc-500">{new Date(l.time * 1000).toLocaleTimeString()} </span>
            {l.line}
          </div>
        ))}
      </pre>
    </div>
  );
}

// Draws an environment's structured view (lib/envs EnvView) where the turn stored one.
import type { EnvView as View } from "@/lib/envs/types";

export function EnvView({ view }: { view: View }) {
  if (view.kind === "grid")
    return (
      <figure className="inline-block">
        <div
          className="inline-grid gap-px rounded bg-zinc-300 p-px dark:bg-zinc-700"
          style={{ gridTemplateColumns: `repeat(${view.cells[0]?.length ?? 1}, 1.5rem)` }}
        >
          {view.cells.flatMap((row, r) =>
            row.map((c, k) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: board cells: the position is the cell
              <div key={`${r}-${k}`} className="grid size-6 place-items-center bg-white font-mono text-xs dark:bg-zinc-900" title={view.legend[c] ?? c}>
                {c}
              </div>
            )),
          )}
        </div>
        <figcaption className="mt-1 text-xs text-zinc-500">
          {view.caption ? <span>{view.caption} · </span> : null}
          {Object.entries(view.legend).map(([k, v]) => (
            <span key={k} className="mr-2">
              <code>{k}</code> {v}
            </span>
          ))}
        </figcaption>
      </figure>
    );
  if (view.kind === "fields")
    return (
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 text-xs">
        {Object.entries(view.fields).map(([k, v]) => (
          <div key={k} className="contents">
            <dt className="text-zinc-500">{k}</dt>
            <dd className="font-mono">{String(v)}</dd>
          </div>
        ))}
      </dl>
    );
  return <pre className="whitespace-pre-wrap font-mono text-xs">{view.text}</pre>;
}

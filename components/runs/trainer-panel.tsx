// A trainer run's launch (jobKind "trainer"): the template, the params as resolved at launch, and
// the argv they made, from the run's config. The worker builds the argv again from its own copy of
// the template file; what it ran is the first line of the job log.
import { cardCls, labelCls } from "@/components/ui/controls";

interface TrainerConfig {
  template?: string;
  title?: string;
  params?: Record<string, unknown>;
  argv?: string[];
  ray?: boolean;
  gpus?: number;
}

const quoted = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);

export function TrainerPanel({ config }: { config: unknown }) {
  const c = (config ?? {}) as TrainerConfig;
  const params = Object.entries(c.params ?? {});
  return (
    <section className={`${cardCls} p-4`} data-testid="trainer-panel" aria-label="Trainer">
      <div className="mb-3 flex flex-wrap items-baseline gap-x-3 gap-y-1">
        <h2 className="font-medium">Trainer</h2>
        <span className="text-sm">{c.title}</span>
        <span className="font-mono text-xs text-zinc-500" data-testid="trainer-template">
          {c.template}
        </span>
        <span className="text-xs text-zinc-500">
          {c.ray ? "on Ray" : "on a worker"}
          {c.gpus ? ` · ${c.gpus} GPU(s)` : " · CPU"}
        </span>
      </div>
      <div className="grid gap-4 lg:grid-cols-[minmax(0,1fr)_minmax(0,2fr)]">
        <div>
          <div className={labelCls}>Params</div>
          {params.length ? (
            <table className="mt-1 text-sm" data-testid="trainer-params">
              <tbody>
                {params.map(([k, v]) => (
                  <tr key={k}>
                    <td className="pr-4 font-mono text-xs text-zinc-500">{k}</td>
                    <td className="font-mono text-xs">{JSON.stringify(v)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="mt-1 text-sm text-zinc-500">none</p>
          )}
        </div>
        <div className="min-w-0">
          <div className={labelCls}>Command (argv, no shell)</div>
          <pre
            className="mt-1 overflow-x-auto whitespace-pre-wrap break-all rounded-md bg-zinc-50 p-2 font-mono text-xs dark:bg-zinc-950"
            data-testid="trainer-argv"
          >
            {(c.argv ?? []).map(quoted).join(" ")}
          </pre>
        </div>
      </div>
    </section>
  );
}

// The worker's Ray settings (docs/ray.md). TURNLENS_RAY_ADDRESS unset:
// train jobs run locally.
import { z } from "zod";

const RayConfigSchema = z.object({
  /** the Ray dashboard's base URL (Jobs API), e.g. http://127.0.0.1:8265 */
  address: z.url({ protocol: /^https?$/, error: "TURNLENS_RAY_ADDRESS must be the Ray dashboard's http(s) URL, e.g. http://127.0.0.1:8265" }),
  /** how many times one claim resubmits a Ray job that ended without a result (killed, node lost) */
  resubmits: z.coerce.number().int().min(0).max(100).default(3),
  /** status and log poll period */
  pollMs: z.coerce.number().int().min(50).default(1_000),
  /** how long the Jobs API may stay unreachable before the attempt counts as lost */
  unreachableMs: z.coerce.number().int().min(0).default(60_000),
  /** the project's directory on the cluster's nodes (the entrypoint runs there) */
  root: z.string().min(1),
  /** Node.js on the cluster's nodes */
  node: z.string().min(1),
  /** GPUs requested for a train config with device "auto" ("cuda" requests 1, "cpu" none) */
  autoGpus: z.coerce.number().min(0).default(0),
});
export type RayConfig = z.infer<typeof RayConfigSchema>;

type Env = Record<string, string | undefined>;
const blank = (v: string | undefined) => (v === undefined || v.trim() === "" ? undefined : v.trim());

const ENV_NAMES: Record<keyof RayConfig, string> = {
  address: "TURNLENS_RAY_ADDRESS",
  resubmits: "TURNLENS_RAY_RESUBMITS",
  pollMs: "TURNLENS_RAY_POLL_MS",
  unreachableMs: "TURNLENS_RAY_UNREACHABLE_MS",
  root: "TURNLENS_RAY_ROOT",
  node: "TURNLENS_RAY_NODE",
  autoGpus: "TURNLENS_RAY_AUTO_GPUS",
};

/**
 * The Ray settings, or null when TURNLENS_RAY_ADDRESS is unset. A bare host:port is taken as
 * http://host:port. Throws naming the variable on a bad value.
 */
export function rayConfig(env: Env, defaults: { root: string; node: string }): RayConfig | null {
  const address = blank(env.TURNLENS_RAY_ADDRESS);
  if (!address) return null;
  const parsed = RayConfigSchema.safeParse({
    address: (/^[a-z]+:\/\//i.test(address) ? address : `http://${address}`).replace(/\/+$/, ""),
    resubmits: blank(env.TURNLENS_RAY_RESUBMITS),
    pollMs: blank(env.TURNLENS_RAY_POLL_MS),
    unreachableMs: blank(env.TURNLENS_RAY_UNREACHABLE_MS),
    root: blank(env.TURNLENS_RAY_ROOT) ?? defaults.root,
    node: blank(env.TURNLENS_RAY_NODE) ?? defaults.node,
    autoGpus: blank(env.TURNLENS_RAY_AUTO_GPUS),
  });
  if (!parsed.success) {
    throw new Error(
      "invalid Ray configuration: " +
        parsed.error.issues.map((i) => `${ENV_NAMES[i.path[0] as keyof RayConfig] ?? String(i.path[0])}: ${i.message}`).join("; "),
    );
  }
  return parsed.data;
}

// Webhook delivery of alerts: a background loop in the web server (scripts/web-server.mjs), never
// an ingest request. Each alert with a webhook is POSTed as JSON; a failure (no answer within
// WEBHOOK_TIMEOUT_MS, or a status outside 2xx) is retried after 1, 2, 4 and 8 s, and after
// WEBHOOK_ATTEMPTS attempts the alert is marked failed. The URL is the project's, set through the
// alert-rules route (http(s) only, behind the API's Host, token and CSRF checks).
import { claimDueWebhooks, recordWebhookAttempt, type WebhookDelivery } from "../db/alerts";
import { getRawDb, type RawDb } from "../db/raw";

export const WEBHOOK_ATTEMPTS = 5;
export const WEBHOOK_TIMEOUT_MS = 5000;
/** How long a claimed delivery is held before another process may try it (longer than one attempt). */
const LEASE_SECONDS = 30;

/** Seconds before attempt n + 1 after n failed attempts: 1, 2, 4, 8. */
export function retryDelaySeconds(failed: number): number {
  return 2 ** (failed - 1);
}

/** The JSON a webhook receives. */
export function webhookBody(d: WebhookDelivery): Record<string, unknown> {
  const { webhookState: _s, ...alert } = d.alert;
  return { event: "turnlens.alert", alert };
}

async function deliver(d: WebhookDelivery, db: RawDb, now: () => number): Promise<boolean> {
  let ok = false;
  try {
    const res = await fetch(d.url, {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": "turnlens-alerts" },
      body: JSON.stringify(webhookBody(d)),
      redirect: "manual",
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => {});
    ok = res.status >= 200 && res.status < 300;
  } catch {
    ok = false;
  }
  const failed = d.attempts + 1;
  recordWebhookAttempt(
    d.alert.id,
    ok ? { state: "sent" } : failed >= WEBHOOK_ATTEMPTS ? { state: "failed" } : { state: "pending", next: now() + retryDelaySeconds(failed) },
    db,
  );
  return ok;
}

/** Posts every due alert's webhook (in parallel, each within its timeout); returns how many were delivered. */
export async function deliverDueWebhooks(db: RawDb = getRawDb(), now = () => Date.now() / 1000): Promise<number> {
  const due = claimDueWebhooks(now(), LEASE_SECONDS, 20, db);
  const results = await Promise.all(due.map((d) => deliver(d, db, now)));
  return results.filter(Boolean).length;
}

/** Starts the delivery loop (every `intervalMs`, one pass at a time); returns its stop. */
export function startWebhookLoop(intervalMs = 1000): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    deliverDueWebhooks()
      .catch((e) => console.error(`alerts: webhook delivery failed (${(e as Error).message})`))
      .finally(() => {
        busy = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

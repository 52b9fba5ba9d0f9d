// Run by serve.sh before it starts anything: refuses a bad token, a non-loopback address
// without TURNLENS_API_TOKEN, and a bad value of any setting read per request (ingest priority,
// the body timeout, the limits and expiry of steps in parts), which would otherwise fail every
// request it governs. The address is parsed (127.0.0.1.nip.io is a DNS name, not loopback).
import { isLoopbackHostname, securityConfig } from "../lib/api/security";
import { ingestNice } from "../lib/ingest/pool";
import { maxStepPartsBytes, stepPartsTtlMs } from "../lib/ingest/batches";
import { bodyTimeoutMs } from "../lib/api/body-timeout";

const host = process.env.TURNLENS_HOST || "127.0.0.1";
try {
  const cfg = securityConfig();
  ingestNice();
  maxStepPartsBytes();
  stepPartsTtlMs();
  bodyTimeoutMs();
  if (!isLoopbackHostname(host) && !cfg.apiToken) {
    console.error(
      `serve: refusing to listen on ${host} without TURNLENS_API_TOKEN (write endpoints would be open to the network); consider TURNLENS_READ_TOKEN too, and list the names clients use in TURNLENS_ALLOWED_HOSTS`,
    );
    process.exit(1);
  }
} catch (e) {
  console.error(`serve: ${(e as Error).message}`);
  process.exit(1);
}

#!/usr/bin/env bash
# Runs the built dashboard and one worker process together; stopping either stops both.
# Env: TURNLENS_HOST (default 127.0.0.1), PORT (3000), DATABASE_URL, TURNLENS_WORKER_CONCURRENCY,
# TURNLENS_API_TOKEN, TURNLENS_READ_TOKEN, TURNLENS_ALLOWED_HOSTS, TURNLENS_STOP_GRACE_MS (a stop
# finishes requests in flight and closes every connection within it: scripts/graceful-stop.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."
HOST="${TURNLENS_HOST:-127.0.0.1}"
PORT="${PORT:-3000}"
# Tokens (>= 32 characters) and the address, checked by parsing, not by pattern.
TURNLENS_HOST="$HOST" node --import tsx scripts/check-serve-config.ts
export NEXT_TELEMETRY_DISABLED=1
# Next's request handler behind a thin front (405 for unknown methods, 400 for malformed paths)
TURNLENS_HOST="$HOST" PORT="$PORT" node scripts/web-server.mjs &
web=$!
node --import tsx workers/worker.ts &
worker=$!
echo "TurnLens: http://$HOST:$PORT (worker pid $worker)"
# A stop signal stops both and exits 0 when both stopped cleanly; either one exiting on its own
# stops the other and exits non-zero (its own status, or 1 when that was 0).
stopping=0
trap 'stopping=1; kill -TERM $web $worker 2>/dev/null || true' INT TERM
trap 'kill -TERM $web $worker 2>/dev/null || true' EXIT
set +e
wait -n $web $worker
first=$?
if [ "$stopping" = 0 ]; then
  echo "TurnLens: the $(kill -0 $web 2>/dev/null && echo worker || echo web server) exited on its own (status $first); stopping" >&2
  kill -TERM $web $worker 2>/dev/null
  wait $web $worker
  exit $((first == 0 ? 1 : first))
fi
# `wait -n` was interrupted by the signal: each process's own status (a wait a second signal
# interrupts is waited again)
status_of() {
  local s
  while :; do
    wait "$1"
    s=$?
    kill -0 "$1" 2>/dev/null || return $s
  done
}
status_of $web
web_status=$?
status_of $worker
worker_status=$?
[ "$web_status" = 0 ] && [ "$worker_status" = 0 ] && exit 0
echo "TurnLens: stopped (web server status $web_status, worker status $worker_status)" >&2
exit 1

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
trap 'kill -TERM $web $worker 2>/dev/null; wait $web $worker 2>/dev/null' INT TERM EXIT
echo "TurnLens: http://$HOST:$PORT (worker pid $worker)"
wait -n $web $worker

#!/usr/bin/env bash
# The README's start command: set up (first run), build the dashboard, serve it with a worker
# on the embedded SQLite database (data/turnlens.db unless DATABASE_URL says otherwise).
#   bash scripts/start.sh               everything, the PyTorch engine included (train jobs run here)
#   bash scripts/start.sh --view-only   without the engine's Python packages (several GB): to view runs
#                                       logged elsewhere (a cluster) and run the Node jobs; a train job
#                                       fails at once saying to run `bash scripts/setup.sh`.
#                                       TURNLENS_ENGINE=skip does the same.
set -euo pipefail
cd "$(dirname "$0")/.."
view_only=""
for arg in "$@"; do
  case "$arg" in
    --view-only) view_only=--view-only ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "start: unknown option $arg (known: --view-only)" >&2; exit 2 ;;
  esac
done
case "${TURNLENS_ENGINE:-}" in
  skip) view_only=--view-only ;;
  ""|install) ;;
  *) echo "start: TURNLENS_ENGINE must be skip or install (got ${TURNLENS_ENGINE})" >&2; exit 2 ;;
esac
bash scripts/setup.sh $view_only
# Rebuild when a source of the build is newer than it. lib/generated is left out: setup.sh regenerates
# the Prisma clients on every start (new files, same content), which made every start rebuild; their
# source, prisma/schema.prisma, is watched instead.
if [ ! -f .next/BUILD_ID ] || [ -n "$(find app components lib proxy.ts next.config.ts postcss.config.mjs tsconfig.json package.json package-lock.json prisma/schema.prisma public \
    -path lib/generated -prune -o -newer .next/BUILD_ID -print -quit 2>/dev/null)" ]; then
  echo "start: building the dashboard…"
  NEXT_TELEMETRY_DISABLED=1 node_modules/.bin/next build
fi
exec bash scripts/serve.sh

#!/usr/bin/env bash
# Idempotent set-up shared by start.sh and test.sh: Node packages, the Python engine's packages,
# the Prisma client and the database migrations. Safe to run again; skips what is already done.
#   bash scripts/setup.sh               everything (what start.sh does by default, and test.sh)
#   bash scripts/setup.sh --view-only   everything but the engine's PyTorch stack (several GB): the
#                                       dashboard, the worker and its Node jobs; train jobs then fail
#                                       at once saying to run `bash scripts/setup.sh`
# Only the flag selects view-only (no environment variable), so test.sh always installs everything.
set -euo pipefail
cd "$(dirname "$0")/.."

engine=install
for arg in "$@"; do
  case "$arg" in
    --view-only) engine=skip ;;
    *) echo "setup: unknown option $arg (known: --view-only)" >&2; exit 2 ;;
  esac
done

need_node="20.19.0"
have_node="$(node -p 'process.versions.node' 2>/dev/null || echo 0)"
if [ "$(printf '%s\n%s\n' "$need_node" "$have_node" | sort -V | head -1)" != "$need_node" ]; then
  echo "setup: Node.js >= $need_node is required (found $have_node)" >&2
  exit 1
fi

# onnxruntime-node's postinstall would fetch CUDA libraries from outside npm; the CPU build ships in the package.
export ONNXRUNTIME_NODE_INSTALL=skip
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ] || [ package.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing Node packages (npm ci, exactly package-lock.json)…"
  # The lock lists every platform's optional packages (@next/swc-*, @tailwindcss/oxide-*), so
  # `npm ci` accepts it on Linux, macOS and Windows. After changing dependencies, regenerate it
  # and check `npm ci --dry-run --os=darwin --cpu=arm64` (and --os=win32 --cpu=x64) still passes.
  npm ci --no-audit --no-fund --loglevel=error
fi

if [ -f workers/engine/requirements.txt ]; then
  PY="${TURNLENS_PYTHON:-python3}"
  stamp="node_modules/.turnlens-pip-$(sha1sum workers/engine/requirements.txt | cut -c1-12)"
  if [ ! -f "$stamp" ] && [ "$engine" = skip ]; then
    echo "setup: view-only: the engine's Python packages (PyTorch, several GB) are left out; train jobs need them: bash scripts/setup.sh"
  elif [ ! -f "$stamp" ]; then
    echo "setup: installing the engine's Python packages (PyTorch and its CUDA libraries, several GB; first time: a few minutes)…"
    if ! "$PY" -m pip install --quiet --disable-pip-version-check -r workers/engine/requirements.txt; then
      echo "setup: the engine's Python packages did not install (pip's message above). To view runs without" >&2
      echo "setup: them (no train jobs on this machine): bash scripts/start.sh --view-only" >&2
      exit 1
    fi
    touch "$stamp"
  fi
fi

# The credit command (turnlens-credit) as compiled JavaScript (dist/credit-cli.cjs), rebuilt when
# cli/credit or lib/credit changed.
node scripts/credit-cli.mjs --build >/dev/null

# Prisma's CLI wants its native schema engine only for migrate; generate needs none (any file will do).
# Two clients from the one schema: SQLite's and PostgreSQL's (derived by scripts/db-schema.mjs).
PRISMA_SCHEMA_ENGINE_BINARY="$(type -P true)" npx prisma generate >/dev/null
PRISMA_SCHEMA_ENGINE_BINARY="$(type -P true)" npx prisma generate --schema "$(node scripts/db-schema.mjs write-postgresql)" >/dev/null
# Migrations through the schema engine's WebAssembly build (no download): same files as `prisma migrate deploy`;
# prisma/migrations for a file: DATABASE_URL, prisma/migrations-postgresql for a postgresql:// one.
node scripts/db-migrate.mjs deploy

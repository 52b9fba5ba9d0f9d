#!/usr/bin/env bash
# The server the browser tests drive: built dashboard + worker on a fresh SQLite file.
set -euo pipefail
cd "$(dirname "$0")/.."
export PORT="${1:-3100}"
export DATABASE_URL="file:./data/e2e.db"
rm -f data/e2e.db data/e2e.db-wal data/e2e.db-shm
# uploads of the import page's tests: fresh with the database
export TURNLENS_UPLOAD_DIR="data/e2e-uploads"
rm -rf "$TURNLENS_UPLOAD_DIR"
node scripts/db-migrate.mjs deploy >/dev/null
exec bash scripts/serve.sh

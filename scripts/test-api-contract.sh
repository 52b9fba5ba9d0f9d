#!/usr/bin/env bash
# Contract test: the built web server on a fresh SQLite file, probed by Schemathesis from the OpenAPI
# document it serves (test/api/schemathesis.toml). Run after `next build`; part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${TURNLENS_PYTHON:-python3}"
dir="$(mktemp -d)"
port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
export DATABASE_URL="file:$dir/contract.db"
# uploads (POST /imports) land beside it, removed with it
export TURNLENS_UPLOAD_DIR="$dir/uploads"
node scripts/db-migrate.mjs deploy >/dev/null
# every response is checked against its declared schema on the server too (a mismatch is a 500)
TURNLENS_CHECK_RESPONSES=1 PORT="$port" node scripts/web-server.mjs >"$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/api/v1/projects" >/dev/null && break; sleep 0.5; done
# some stored data, so operations on existing runs are reached too
node --import tsx scripts/seed-contract-data.ts "http://127.0.0.1:$port" >/dev/null
# a valid OpenAPI 3.1 document first (every $ref resolves, every schema is JSON Schema 2020-12)
"$PY" - "http://127.0.0.1:$port/api/v1/openapi.json" <<'PYEOF'
import json, sys, urllib.request
from openapi_spec_validator import validate
doc = json.load(urllib.request.urlopen(sys.argv[1]))
validate(doc)
print(f"openapi: valid OpenAPI {doc['openapi']} document, {sum(len(v) for v in doc['paths'].values())} operations, {len(doc['components']['schemas'])} schemas")
PYEOF
status=0
"$PY" -m schemathesis.cli --config-file test/api/schemathesis.toml run --no-color \
  "http://127.0.0.1:$port/api/v1/openapi.json" --url "http://127.0.0.1:$port/api/v1" || status=$?
if grep -q "internal error\|violates its schema" "$dir/server.log"; then
  echo "contract: the server logged errors:" >&2
  grep -m 20 "internal error\|violates its schema\|unexpected error" "$dir/server.log" >&2
  status=1
fi
exit $status

#!/usr/bin/env bash
# The README's test command: every suite. TypeScript (types, unit, integration with real worker
# processes and the real engine), the Python engine (pytest), and end-to-end in Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's wall time, printed as it ends and again as a table when the command exits (pass or
# fail), so the slowest stage is the first thing a reader sees.
STAGE_NAMES=() STAGE_SECS=() stage_name="" stage_start=0 all_start=$SECONDS
end_stage() {
  [ -n "$stage_name" ] || return 0
  local took=$((SECONDS - stage_start))
  STAGE_NAMES+=("$stage_name") STAGE_SECS+=("$took")
  echo "-- $stage_name: ${took} s"
  stage_name=""
}
stage() { end_stage; stage_name="$1" stage_start=$SECONDS; echo "== $2"; }
stage_table() {
  local rc=$?
  end_stage
  echo "== stage times (s)"
  for i in "${!STAGE_NAMES[@]}"; do printf '%6d  %s\n' "${STAGE_SECS[$i]}" "${STAGE_NAMES[$i]}"; done
  printf '%6d  total (exit %d)\n' "$((SECONDS - all_start))" "$rc"
}
trap stage_table EXIT

stage setup "set-up (scripts/setup.sh)"
bash scripts/setup.sh

stage chromium "browser (Debian's chromium)"
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "test: installing Debian's chromium for the browser tests…"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "test: chromium is missing; install it with: sudo apt-get install -y chromium" >&2
    exit 1
  fi
fi

stage typecheck "typecheck"
node_modules/.bin/tsc --noEmit -p tsconfig.json

stage layers "layers (imports flow one way, ARCHITECTURE.md; no import cycle in the Python engine)"
node scripts/check-layers.mjs

stage biome "TypeScript lint and format (Biome: the recommended rules, scope and exceptions in biome.jsonc; zero findings)"
# warnings fail through --error-on-warnings; infos (which never change the exit status) fail here
lint_out=$(node_modules/.bin/biome lint --error-on-warnings --max-diagnostics=none 2>&1) || { echo "$lint_out"; exit 1; }
if grep -q "^Found " <<<"$lint_out"; then
  echo "$lint_out"
  echo "test: Biome reported findings (infos count too); fix them or see biome.jsonc" >&2
  exit 1
fi
# formatted as `npm run format` leaves it (the formatter was applied to every file once)
node_modules/.bin/biome format >/dev/null 2>&1 || { node_modules/.bin/biome format 2>&1 | tail -30; echo "test: files not formatted; run npm run format" >&2; exit 1; }

stage ruff "python lint (ruff: every Python file, rules in ruff.toml; the engine and its tests formatted)"
PY="${TURNLENS_PYTHON:-python3}"
stamp="node_modules/.turnlens-pip-lint-$(sha1sum test/lint-requirements.txt | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  "$PY" -m pip install --quiet --disable-pip-version-check -r test/lint-requirements.txt
  touch "$stamp"
fi
"$PY" -m ruff check .
"$PY" -m ruff format --check workers/engine test/engine

stage ray-venv "Ray for the Ray-backed training test"
# Ray for the Ray-backed training test (a local head on loopback), in a venv of its own; about a
# minute the first time (pip ~40-55 s here). Without it that test is skipped with a message.
RAY_VENV="node_modules/.turnlens-ray-venv"
stamp="node_modules/.turnlens-ray-$(sha1sum workers/ray/requirements.txt | cut -c1-12)"
if [ ! -f "$stamp" ] || [ ! -x "$RAY_VENV/bin/ray" ]; then
  echo "test: installing ray[default] into $RAY_VENV…"
  if "${TURNLENS_PYTHON:-python3}" -m venv "$RAY_VENV" && "$RAY_VENV/bin/pip" install --quiet --disable-pip-version-check -r workers/ray/requirements.txt; then
    touch "$stamp"
  else
    echo "test: ray did not install; test/train/ray-train.test.ts is skipped" >&2
  fi
fi

stage postgresql-install "PostgreSQL server and the libpq addon"
# PostgreSQL for the second pass below: Debian's server package and the libpq addon (optional
# dependency, built by node-gyp against libpq-dev).
if [ -z "${TURNLENS_TEST_PG:-}" ] && [ ! -x /usr/lib/postgresql/15/bin/initdb ] && [ "$(id -u)" = 0 ]; then
  echo "test: installing Debian's postgresql for the PostgreSQL suites…"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
if ! node -e 'require("libpq")' >/dev/null 2>&1; then
  if ! command -v pg_config >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpq-dev >/dev/null
  fi
  npm rebuild libpq --foreground-scripts >/dev/null 2>&1 || true
fi

stage suite-packages "the test suites' own packages (Schemathesis, the client tests' libraries)"
PY="${TURNLENS_PYTHON:-python3}"
stamp="node_modules/.turnlens-pip-api-$(sha1sum test/api/requirements.txt | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  "$PY" -m pip install --quiet --disable-pip-version-check -r test/api/requirements.txt
  touch "$stamp"
fi
# The client (clients/python, standard library only) is tested against the build on a temp database.
# The integrations and importers are tested against the real libraries (TRL, verl, SkyRL, MLflow,
# TensorBoard, Trackio, W&B, Inspect ...), pinned in clients/python/tests/requirements-*.txt and
# installed into a venv over the engine's torch/transformers; *-nodeps.txt with --no-deps (pins of
# versions their CPU modules do not need).
CLIENT_VENV="node_modules/.turnlens-client-venv"
stamp="node_modules/.turnlens-client-$(cat clients/python/tests/requirements-*.txt | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ] || [ ! -x "$CLIENT_VENV/bin/python" ]; then
  echo "test: installing the client tests' libraries into $CLIENT_VENV…"
  "$PY" -m venv --system-site-packages "$CLIENT_VENV"
  for req in clients/python/tests/requirements-*.txt; do
    case "$req" in *-nodeps.txt) continue ;; esac
    "$CLIENT_VENV/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  done
  for req in clients/python/tests/requirements-*-nodeps.txt; do
    [ -f "$req" ] && "$CLIENT_VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req"
  done
  touch "$stamp"
fi

# Two lanes side by side: the suites mostly wait (worker and engine processes, leases, servers
# starting), so on 2 cores the second lane runs in what the first leaves idle; the timing-sensitive
# browser tests run after both, alone. Lane A (vitest) prints as it goes; lane B's output follows
# when both are done. Each lane's stages are in the table at the end.
LANES="$(mktemp -d)"
lane_stage() {
  if [ -n "${ls_name:-}" ]; then
    echo "-- $ls_name: $((SECONDS - ls_start)) s"
    echo "$ls_name $((SECONDS - ls_start))" >>"$LANES/times"
  fi
  ls_name="$1" ls_start=$SECONDS
  [ -z "$1" ] || echo "== $2"
}
lane_a() {
  # PostgreSQL suites (test/db/postgres.test.ts) use TURNLENS_TEST_PG (a postgresql:// server URL) if
  # set, else a temporary cluster of Debian's PostgreSQL 15 on a free loopback port, removed at the
  # end; without PostgreSQL installed (apt-get install postgresql) they are skipped with a message.
  lane_stage a:vitest "unit and integration tests (vitest)"
  node_modules/.bin/vitest run
  # scripts/pg-temp.ts starts a temporary cluster (or uses TURNLENS_TEST_PG's server) and removes it
  # at the end; test/helpers/temp-db.ts gives each file its own database there.
  lane_stage a:vitest-postgresql "database and queue suites again, on PostgreSQL (TURNLENS_TEST_STORE=postgresql)"
  local pg_suites=(test/db test/platform test/jobs/queue.test.ts test/jobs/list.test.ts test/jobs/worker-fleet.test.ts
    test/jobs/lease-hold.test.ts test/dashboard/credit-api.test.ts test/schemas)
  node --import tsx scripts/pg-temp.ts -- env TURNLENS_TEST_STORE=postgresql node_modules/.bin/vitest run "${pg_suites[@]}"
  lane_stage "" ""
}
lane_b() {
  lane_stage b:pytest-engine "engine tests (pytest)"
  "$PY" -m pytest test/engine -q
  lane_stage b:next-build "build"
  NEXT_TELEMETRY_DISABLED=1 node_modules/.bin/next build >/dev/null
  lane_stage b:schemathesis "API contract (Schemathesis against the generated OpenAPI document)"
  bash scripts/test-api-contract.sh
  lane_stage b:pytest-client "python client tests (pytest)"
  "$CLIENT_VENV/bin/python" -m pytest clients/python/tests -q
  lane_stage "" ""
}
stage lanes "lane A: vitest on SQLite, then on PostgreSQL | lane B: engine tests, build, API contract, client tests"
# each lane in a subshell of its own with errexit on (an `||` around a function would turn it off)
(set -e; lane_b) >"$LANES/b.log" 2>&1 &
lane_b_pid=$!
set +e
(set -e; lane_a) 2>&1 | tee "$LANES/a.log"
lane_a_status=${PIPESTATUS[0]}
wait "$lane_b_pid"
lane_b_status=$?
set -e
echo "== lane B's output"
cat "$LANES/b.log"
end_stage
while read -r name secs; do STAGE_NAMES+=("  $name") STAGE_SECS+=("$secs"); done <"$LANES/times"
if [ "$lane_a_status" != 0 ] || [ "$lane_b_status" != 0 ]; then
  echo "test: lane A exited $lane_a_status, lane B exited $lane_b_status (their output above)" >&2
  exit 1
fi

stage playwright "end-to-end tests (Playwright, Chromium)"
node_modules/.bin/playwright test

#!/usr/bin/env bash
# npm run mutation: StrykerJS over src/model, src/render and src/host (stryker.config.json; incremental, its file in
# reports/, not committed).
# The sandbox is a copy under .stryker-tmp/, so the schemas and vendored scripts beside the repository are passed by
# absolute path.
set -euo pipefail
cd "$(dirname "$0")/.."
export TUNNELWRIGHT_SCHEMAS="${TUNNELWRIGHT_SCHEMAS:-$(cd .. && pwd)/shared/schemas}"
export TUNNELWRIGHT_VENDOR="${TUNNELWRIGHT_VENDOR:-$(cd .. && pwd)/shared/vendor}"
# The tools scripts/install-system-tools.sh unpacks (promtool): the sandbox leaves .tools out, and the unit tests that
# run the alert rules under promtool find it on PATH (test/system/tools.ts), so those rules' mutants meet them.
export PATH="$PWD/.tools/bin:$PATH"
# Properties take 15 % of their runs (test/helpers/runs.ts): each mutant runs every covering test to its end.
export TUNNELWRIGHT_PROPERTY_RUNS_SCALE="${TUNNELWRIGHT_PROPERTY_RUNS_SCALE:-0.15}"
exec npx stryker run "$@"

#!/usr/bin/env bash
# npm run mutation: StrykerJS over src/model, src/render and src/host (stryker.config.json; incremental).
# The sandbox is a copy under .stryker-tmp/, so the schemas beside the repository are passed by absolute path.
set -euo pipefail
cd "$(dirname "$0")/.."
export TUNNELWRIGHT_SCHEMAS="${TUNNELWRIGHT_SCHEMAS:-$(cd .. && pwd)/shared/schemas}"
exec npx stryker run "$@"

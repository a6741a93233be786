#!/usr/bin/env bash
# The main job on the bundled data (falls back to a built-in demo table when ../shared/data is absent).
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$root"
exec "$venv/bin/python" -m marginals "$@"

#!/usr/bin/env bash
# The main job: an AIM release (eps = 1) of the bundled adult data plus synthetic rows in results/release/
# (falls back to a built-in demo table when ../shared/data is absent). Flags: python -m aim --help.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$root"
exec "$venv/bin/python" -m aim "$@"

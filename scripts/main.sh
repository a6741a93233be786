#!/usr/bin/env bash
# The main job: `dp-marginals synth` on the bundled adult data (eps = 1): a release and a synthetic CSV in results/
# (falls back to a built-in demo table when ../shared/data is absent). Flags: .venv/bin/dp-marginals synth --help.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$root"
exec "$venv/bin/dp-marginals" synth "$@"

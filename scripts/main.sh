#!/usr/bin/env bash
# The main job: `dp-marginals synth` on the Adult table shipped inside the package (marginals.datasets, eps = 1):
# a release and a synthetic CSV in results/. Flags: .venv/bin/dp-marginals synth --help.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$root"
exec "$venv/bin/dp-marginals" synth "$@"

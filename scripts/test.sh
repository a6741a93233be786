#!/usr/bin/env bash
# The whole test suite (slow statistical tests included; add -m "not slow" to skip them locally),
# on every core (pytest-xdist; PYTEST_WORKERS=0 runs it in this one process).
set -euo pipefail
extras=test  # the test-only dependencies (jax, dask, hypothesis, ...) are installed here, not by the main job
source "$(dirname "$0")/_venv.sh"
cd "$root"
exec "$venv/bin/python" -m pytest -n "${PYTEST_WORKERS:-auto}" "$@"

#!/usr/bin/env bash
# The whole test suite (slow statistical tests included; add -m "not slow" to skip them locally).
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$root"
exec "$venv/bin/python" -m pytest "$@"

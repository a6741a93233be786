# Sourced by scripts/main.sh and scripts/test.sh: create ./.venv on first use and (re)install the
# project, with the exact versions of constraints.txt, whenever pyproject.toml or constraints.txt
# changes (refresh the pins: bash scripts/refresh-constraints.sh). Needs Python >= 3.11 on PATH.
# The caller sets `extras` to what it needs: the main job only the small `progress` extra (tqdm),
# the tests `test` (jax, dask, ...). Each set is installed once per version of the pins.
set -euo pipefail
extras="${extras:-progress}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  py=""
  for cand in python3.13 python3.12 python3.11 python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      py="$cand"; break
    fi
  done
  [ -n "$py" ] || { echo "error: Python >= 3.11 is required" >&2; exit 1; }
  "$py" -m venv "$venv"
fi
sum="$(cat "$root/pyproject.toml" "$root/constraints.txt" | cksum | cut -d' ' -f1)"
stamp="$venv/.installed-$sum-${extras//,/-}"  # one stamp per set of extras installed with these pins
if [ ! -f "$stamp" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -c "$root/constraints.txt" -e "$root[$extras]" >&2
  find "$venv" -maxdepth 1 -name ".installed-*" ! -name ".installed-$sum-*" -delete  # stamps of older pins
  touch "$stamp"
fi

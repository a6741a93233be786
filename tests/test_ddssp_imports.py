"""What ``import ddssp`` and a fit load: no AIM (it comes in only when a coefficient interval reruns or
resamples a release), and no baseline inside the core estimators."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
import warnings

import numpy as np

import ddssp

loaded = sorted(m for m in sys.modules if m == "aim" or m.startswith("aim."))
assert not loaded, f"import ddssp loaded {loaded}"
assert "ddssp.bayes.resampling" not in sys.modules

from marginals import Dataset
from marginals.datasets import demo_dataset

full = demo_dataset(5000, seed=1)
attrs = ["education", "married", "income"]
data = Dataset(full.to_df()[attrs], full.domain.project(attrs))
ddssp.DDSSPLinearRegression("education", categorical=["married"]).fit(data)  # a fit (size checked) without an interval
ddssp.DDSSPLogisticRegression("income", categorical=["married"]).fit(data)
loaded = sorted(m for m in sys.modules if m == "aim" or m.startswith("aim."))
assert not loaded, f"a fit without an interval loaded {loaded}"

from aim import AIM
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    release = AIM(1.0, 1e-5, insecure_seed=0, exact_noise=False).run(data)
model = ddssp.DDSSPLinearRegression("education", categorical=["married"], interval="measurements", n_boot=5,
                                    random_state=0).fit(release)
assert model.coef_interval_.shape == (len(model.coef_), 2) and np.all(np.isfinite(model.coef_interval_))
assert np.all(model.coef_interval_[:, 0] <= model.coef_interval_[:, 1])
assert "ddssp.bayes.resampling" in sys.modules
print("ok")
"""


def test_import_ddssp_loads_no_aim_and_an_interval_still_works():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def _imported_modules(path: Path) -> set[str]:
    """Every module a source file imports (module level and inside functions), relative ones resolved."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def test_the_core_estimators_import_no_baseline():
    for name in ("base.py", "estimators.py", "solvers.py", "statistics.py", "encoding.py", "inputs.py"):
        imported = _imported_modules(ROOT / "ddssp" / name)
        assert not [m for m in imported if m.startswith("ddssp.baselines")], (name, imported)

"""`python -m marginals` on the shipped Adult table and on the demo table; the demo table itself;
the development-data finder (`benchmarks.data`), which the library never calls."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marginals import Dataset
from marginals.datasets import demo_dataset, demo_domain, load_adult
from benchmarks.data import data_dir, load_bundled

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env_extra: dict[str, str] | None = None, drop_env: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if drop_env:
        env.pop("DP_MARGINALS_DATA", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "marginals", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_cli_on_the_shipped_adult_table_without_the_development_data(tmp_path):
    # the library never looks for ../shared/data: the run is the same with the folder hidden
    proc = run_cli("--epsilon", "1.0", "--delta", "1e-9", env_extra={"DP_MARGINALS_DATA": str(tmp_path / "nowhere")})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"data set adult: {len(load_adult()):,} rows x 15 attributes" in out
    assert "computed 120 marginals" in out
    assert re.search(r"workclass +9 +0 +0\.[0-9]+  Private", out)  # the mode's label from the codebook
    assert "privacy ledger: 120 charge(s)" in out
    m = re.search(r"budget eps = ([0-9.]+)", out)
    assert m and abs(float(m.group(1)) - 1.0) < 1e-5


def test_cli_on_the_demo_table(tmp_path):
    proc = run_cli("--dataset", "demo", "--insecure-seed", "0")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    d = demo_domain()
    assert f"data set demo: 20,000 rows x {len(d)} attributes" in out
    assert f"computed {len(d) + len(d) * (len(d) - 1) // 2} marginals" in out
    assert "privacy ledger" in out and "(eps, delta)-DP" in out
    # deterministic under a (test-only) seed: the same run prints the same numbers (timing line aside)
    again = run_cli("--dataset", "demo", "--insecure-seed", "0").stdout
    strip = lambda s: re.sub(r"in [0-9.]+ ms", "", s)
    assert strip(again) == strip(out)
    # by default the noise comes from the OS's secure source (no seed needed, none printed)
    secure = run_cli("--dataset", "demo")
    assert secure.returncode == 0 and "discrete Gaussian mechanism" in secure.stdout and "seed" not in secure.stdout


def test_data_dir_respects_explicit_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("DP_MARGINALS_DATA", str(tmp_path / "nowhere"))
    assert data_dir() is None
    with pytest.raises(FileNotFoundError, match="bundled data folder"):
        load_bundled("adult")


@pytest.mark.skipif(data_dir() is None, reason="bundled data absent")
def test_load_bundled_unknown_name():
    with pytest.raises(FileNotFoundError, match=r"no data set 'nope' under .*available: \[.*'adult'"):
        load_bundled("nope")


def test_demo_table_is_deterministic():
    a, b, c = demo_dataset(3000, seed=5), demo_dataset(3000, seed=5), demo_dataset(3000, seed=6)
    assert isinstance(a, Dataset) and len(a) == 3000 and a.domain == demo_domain()
    pd.testing.assert_frame_equal(a.to_df(), b.to_df())
    assert not a.to_df().equals(c.to_df())
    df = a.to_df()
    assert list(df.columns) == list(demo_domain().attrs)
    for attr, m in zip(demo_domain().attrs, demo_domain().shape):
        assert df[attr].between(0, m - 1).all()
    # the default table is the one the CLI prints: same seed, same table
    pd.testing.assert_frame_equal(demo_dataset().to_df(), demo_dataset(20_000, seed=0).to_df())


def test_demo_table_has_dependencies():
    df = demo_dataset(20_000, seed=0).to_df()
    # income depends on education (a parent in the generating network): chi-square independence is rejected
    from scipy.stats import chi2_contingency

    table = pd.crosstab(df["education"], df["income"]).to_numpy()
    assert chi2_contingency(table).pvalue < 1e-6
    assert np.all(df.nunique() >= 2)

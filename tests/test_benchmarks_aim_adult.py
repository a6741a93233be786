"""benchmarks/aim_adult.py: ``--split all`` runs on train + test (the 48,842-row adult of mbi's reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.data import data_dir

from benchmarks import aim_adult

needs_data = pytest.mark.skipif(data_dir() is None, reason="bundled data absent")


@needs_data
def test_all_split_is_train_plus_test():
    folder = data_dir() / "adult"
    raw = pd.concat([pd.read_csv(folder / "train.csv"), pd.read_csv(folder / "test.csv")], ignore_index=True)
    rows = aim_adult.load_rows("adult", "all")
    assert len(rows) == len(raw) == 48_842  # UCI adult.names: 48,842 instances
    levels = rows.domain["relationship"]
    expected = np.bincount(raw["relationship"].to_numpy(), minlength=levels)
    np.testing.assert_array_equal(rows.marginal(["relationship"]), expected)
    assert len(aim_adult.load_rows("adult", "train")) == len(raw) - 1_000


def test_split_reaches_every_job():
    args = aim_adult.parse_args(["--eps", "1", "--seeds", "0", "1", "--others", "--split", "all"])
    jobs = aim_adult.plan(args)
    assert [j["seed"] for j in jobs] == [0, 1]
    assert all(j["split"] == "all" for j in jobs)
    assert aim_adult.parse_args([]).split == "train"

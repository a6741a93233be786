"""The conditional-sampling benchmark's measurements on a small model: its TV is the plain formula,
the second exact route agrees with the conditioned model, given cells are kept, and its report renders."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchmarks.conditional_sampling import dict_part, frame_part, report, tv_table
from marginals.domain import Domain

DOM = Domain(tuple("abcd"), (3, 4, 2, 5))
CLIQUES = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]


@pytest.fixture(scope="module")
def release(random_model):
    return SimpleNamespace(model=random_model(DOM, CLIQUES, 12, total=500.0))


def test_tv_is_half_the_l1_distance(release):
    rows = pd.DataFrame({"a": [0, 0, 1, 2], "b": [0, 1, 1, 3], "c": [0] * 4, "d": [1] * 4})
    out = tv_table(rows, release.model, [("a",), ("a", "b")])
    p = release.model.project(("a",)).values / release.model.total
    assert out["1-way"]["mean_tv"] == pytest.approx(0.5 * np.abs(np.array([0.5, 0.25, 0.25]) - p).sum())
    assert out["1-way"]["marginals"] == 1 and out["2-way"]["marginals"] == 1


def test_parts_measure_what_they_claim(release):
    d = dict_part(release, {"a": 1, "d": [0, 4]}, 20_000, 1)
    assert d["evidence_respected"] and d["second_route_max_abs_diff"] < 1e-12 and 0 < d["p_evidence"] < 1
    assert d["accuracy"]["1-way"]["mean_tv"] < 0.01
    f = frame_part(release, 5_000, 1, 0.0)
    assert f["given_cells_kept"] and f["patterns"] == 1 and f["imputed_columns"] == ["b", "d"]
    assert f["accuracy"]["2-way"]["mean_tv"] < 3 * f["accuracy"]["2-way"]["iid_mean_tv"]
    g = frame_part(release, 5_000, 1, 0.2)
    assert g["patterns"] > 1 and g["given_cells_kept"]
    text = report({"machine": {"cpus": 2, "load_average_1min": 1.0}, "rows": 20_000, "given_rows": 5_000,
                   "repeat": 1, "data": {"toy": {"dict": d, "frame": f, "frame_scattered": g}}})
    assert "| toy |" in text and "per-row s" in text

"""`benchmarks.encoding_defaults` on adult's logistic task (5,000 rows; DD-SSP on the exact marginals
instead of a release, to stay fast): every encoding fitted by every method, widths as the domain
declares them, no default warning where the domain knows its order, and the summary table."""

from __future__ import annotations

import pytest

from benchmarks import encoding_defaults
from benchmarks.data import data_dir
from benchmarks.figure3_fits import TASKS
from benchmarks.harness import load_split, results_frame

pytestmark = [pytest.mark.slow, pytest.mark.skipif(data_dir() is None, reason="development data absent")]


def test_every_encoding_of_adult_logistic():
    task = next(t for t in TASKS if t.dataset == "adult" and t.name == "logistic")
    train, test = load_split("adult", 5000)
    rows = [r for method in ("public", "ddssp", "baseline")
            for r in encoding_defaults.fit_rows(task, train, test, method, 1.0, 0, 7)]  # fmt: skip
    df = results_frame(rows, encoding_defaults.COLUMNS)
    assert len(df) == 3 * len(encoding_defaults.ENCODINGS)
    width = df[df.method == "public"].set_index("encoding").n_features
    assert width["old"] == 264 and width["new"] == width["preset"] == 100 and width["new-knots2"] == 112
    assert (df.default_warnings == 0).all() and df.metric.between(0.5, 1).all()
    table = encoding_defaults.summary(df)
    assert "| adult | logistic | auc | new | 100 |" in table and table.count("\n") == 1 + len(encoding_defaults.ENCODINGS)

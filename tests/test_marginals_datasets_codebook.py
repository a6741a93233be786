"""The codebook of the shipped Adult (`marginals.datasets.adult_codebook`): its labels are UCI's, it
reproduces the shipped rows exactly from the raw UCI files, `load_adult(labels=True)` decodes through it,
and `dp-marginals synth` on the shipped table writes labelled rows and stores the codebook in the release
(issue 24: "the shipped-table CSV is codes with no codebook")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.data import data_dir, load_adult_raw
from marginals.datasets import CODEBOOKS, adult_codebook, adult_domain, load_adult

RAW = None if data_dir() is None else data_dir() / "adult-raw"
needs_raw = pytest.mark.skipif(RAW is None or not (RAW / "adult.data").is_file(),
                               reason="the raw UCI adult files (../shared/data/adult-raw) are absent")  # fmt: skip
# adult.names, "workclass:" and "race:" lines, in their order (the codes follow it; "?" comes last)
WORKCLASS = ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov", "Without-pay",
             "Never-worked"]  # fmt: skip
RACE = ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"]


def test_codebook_covers_the_shipped_domain_with_uci_labels():
    book = adult_codebook()
    assert book.domain == adult_domain()
    assert book.labels("workclass")[:8] == WORKCLASS and len(book.labels("workclass")) == 9  # + the "?" level
    assert book.labels("race") == RACE
    assert book.labels("income>50K") == ["<=50K", ">50K"]
    assert book.labels("education-num") == [str(v) for v in range(1, 17)]
    assert book.labels("age")[0] == "[17, 19)" and book.labels("hours-per-week")[-1] == "[97, 99]"
    assert CODEBOOKS["adult"] is adult_codebook


@needs_raw
def test_codebook_reproduces_the_shipped_rows_from_the_raw_uci_files():
    """The raw adult.data + adult.test through the codebook give exactly the shipped rows (as a multiset:
    the shipped table is shuffled), so every code's label is the raw file's value."""
    raw = pd.concat([load_adult_raw("train", keep_markers=True), load_adult_raw("test", keep_markers=True)],
                    ignore_index=True).rename(columns={"income": "income>50K"})  # fmt: skip
    book = adult_codebook()
    coded = book.transform_df(raw)
    assert book.last_report["clipped"] == 0 and book.last_report["other"] == 0 and book.last_report["dropped"] == 0
    attrs = list(adult_domain().attrs)
    shipped = load_adult("all", as_frame=True)
    assert coded[attrs].value_counts().sort_index().equals(shipped[attrs].value_counts().sort_index())


def test_load_adult_labels_decodes_through_the_codebook():
    codes = load_adult("test", as_frame=True)
    labels = load_adult("test", labels=True)
    assert labels.shape == codes.shape and list(labels.columns) == list(codes.columns)
    assert set(labels["income>50K"]) == {"<=50K", ">50K"}
    assert labels["workclass"].isna().sum() == int((codes["workclass"] == 8).sum())  # "?" is NaN
    assert labels["education-num"].astype(int).tolist() == (codes["education-num"] + 1).tolist()
    assert adult_codebook().transform_df(labels.fillna("?").assign(**{
        c: [int(v.strip("[]()").split(",")[0]) for v in labels[c]]
        for c in ("age", "fnlwgt", "capital-gain", "capital-loss", "hours-per-week")})).equals(codes)  # fmt: skip
    X, y = load_adult("test", labels=True, return_X_y=True)
    assert "income>50K" not in X and y.name == "income>50K" and y.iloc[0] in ("<=50K", ">50K")


@pytest.mark.slow
def test_synth_on_the_shipped_adult_writes_labels_and_stores_the_codebook(tmp_path):
    from aim import Release
    from ddssp.cli import main

    out, release = tmp_path / "s.csv", tmp_path / "r.npz"
    assert main(["synth", "--epsilon", "1", "--max-model-size", "2", "--rows", "300", "--quiet",
                 "--out", str(out), "--release", str(release)]) == 0  # fmt: skip
    rows = pd.read_csv(out)
    assert set(rows["workclass"].dropna()) <= set(WORKCLASS) and set(rows["income>50K"]) <= {"<=50K", ">50K"}
    assert rows["age"].between(17, 103).all() and np.issubdtype(rows["age"].dtype, np.integer)
    assert Release.load(release).spec == adult_codebook().to_spec()

"""No row is left out silently (issue 24, deliverable 2): a raw table with a rare category and rare
missing values keeps every row through `aim.synthesize` and ``dp-marginals synth``; a schema that
closes a column leaves rows out only with a public statement (spec ``"excluded"``, stderr, the
summary, ``inspect``) that holds no count of the rows; ``predict`` codes rows by the same rules and
names the column and the rule of a row it cannot code."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from aim import Release, synthesize
from ddssp.cli import main
from marginals import Discretizer
from marginals.spec.discretize import EXCLUDED_FIELDS

pytestmark = [pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning"),
              pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning"),
              pytest.mark.filterwarnings("ignore::ddssp.statistics.InferredPairsWarning")]
FAST = {"rounds": 6, "max_iters": 10, "final_iters": 30}
#: closes job (values outside its released categories left out) and drops rows with a missing age
CLOSED = {"columns": {"age": {"type": "integer", "missing": "drop"}, "job": {"type": "categorical", "unseen": "drop"},
                      "city": None, "hours": None}}


def raw_table(n: int = 3000) -> pd.DataFrame:
    """Rows with a value held by one row (astronaut), one held by 3 (diver), 2 blank cities and 3 '?' ages."""
    rng = np.random.default_rng(11)
    age = rng.integers(18, 80, n).astype(object)
    job = rng.choice(["clerk", "nurse", "teacher"], n).astype(object)
    city = rng.choice(["Lyon", "Paris"], n).astype(object)
    job[0], job[1:4] = "astronaut", "diver"
    city[5:7] = ""
    age[8:11] = "?"
    return pd.DataFrame({"age": age, "job": job, "city": city, "hours": rng.integers(10, 60, n)})


def test_synthesize_keeps_every_row_of_a_rare_category_and_rare_missing_values():
    raw = raw_table()
    release, synthetic = synthesize(raw, 2.0, insecure_seed=4, **FAST)
    spec = release.spec
    assert "astronaut" not in spec["columns"]["job"]["categories"] and "diver" not in spec["columns"]["job"]["categories"]
    assert spec.get("excluded", []) == [] and release.discretizer.excluded() == []
    coded = release.discretizer.transform(raw)
    report = release.discretizer.last_report
    assert len(coded) == len(raw) and report["dropped"] == 0
    assert report["columns"]["job"]["other"] == 4 and report["columns"]["city"]["missing"] == 2
    assert report["columns"]["age"]["missing"] == 3  # the rare missing values have their level
    assert all(spec["columns"][c]["missing"] == "level" for c in raw.columns)
    assert "rows left out: none" in release.summary() and len(synthetic) == round(release.total)


def _check_statements(spec: dict) -> None:
    """The closed schema's statements: one per "drop" rule, no noisy count, no bound, and the only
    number in the words is the public number of job's categories (never a count of rows)."""
    excluded = spec["excluded"]
    assert [(x["column"], x["rule"]) for x in excluded] == [("age", "missing"), ("job", "unseen")]
    assert all(set(x) == set(EXCLUDED_FIELDS) and x["bound"] is None and x["noisy_count"] is None for x in excluded)
    assert re.findall(r"\d+", excluded[0]["statement"]) == []
    assert re.findall(r"\d+", excluded[1]["statement"]) == [str(len(spec["columns"]["job"]["categories"]))]
    assert all("not released" in x["statement"] for x in excluded)


def test_a_closed_schema_leaves_rows_out_only_with_a_public_statement():
    raw = raw_table()
    release, _ = synthesize(raw, 2.0, schema=CLOSED, insecure_seed=4, **FAST)
    _check_statements(release.spec)
    disc = release.discretizer
    assert len(disc.transform(raw)) < len(raw)  # the astronaut, the divers and the '?' ages are left out
    summary = release.summary()
    assert all(f"rows left out: {x['statement']}" in summary for x in release.spec["excluded"])
    assert Discretizer(release.spec) == disc and Discretizer(release.spec).excluded() == release.spec["excluded"]


def test_a_declared_spec_states_its_drop_rules_in_the_release():
    spec = {"columns": {"job": {"type": "categorical", "categories": ["clerk", "nurse"], "unseen": "drop"},
                        "hours": {"type": "numeric", "lo": 0, "hi": 60, "bins": 4, "missing": "error"}}}
    release, _ = synthesize(raw_table()[["job", "hours"]], 2.0, spec=spec, insecure_seed=1, **FAST)
    assert [(x["column"], x["rule"]) for x in release.spec["excluded"]] == [("job", "unseen")]
    assert "its 2 categories" in release.spec["excluded"][0]["statement"]


@pytest.mark.parametrize("bad", [[{"column": "job"}], {"column": "job"},
                                 [{"column": "job", "rule": "other", "statement": "", "bound": None, "noisy_count": None}],
                                 [{"column": "job", "rule": "unseen", "statement": "", "bound": 1.5, "noisy_count": None}]])
def test_a_malformed_excluded_list_is_refused(bad):
    with pytest.raises(ValueError, match="'excluded' must be a list of objects"):
        Discretizer({"excluded": bad, "columns": {"job": {"type": "categorical", "categories": ["a"]}}})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("noloss")
    raw_table().to_csv(folder / "raw.csv", index=False)
    (folder / "closed.json").write_text(json.dumps(CLOSED))
    return folder


def _synth(folder, name: str, *extra: str) -> list[str]:
    return ["synth", "--data", str(folder / "raw.csv"), "--epsilon", "2", "--quiet", "--insecure-seed", "3",
            "--out", str(folder / f"{name}.csv"), "--release", str(folder / f"{name}.npz"), *extra]


def test_cli_synth_inspect_and_predict_keep_every_row(files, capsys):
    assert main(_synth(files, "open")) == 0
    out, err = capsys.readouterr()
    assert "rows left out: none" in out and "rows left out" not in err
    assert main(["fit", "--release", str(files / "open.npz"), "--target", "hours", "--json", str(files / "c.json"),
                 "--quiet"]) == 0
    rows = pd.DataFrame({"age": ["?", "30", "", "200"], "job": ["astronaut", "nurse", "", "pilot"],
                         "city": ["", "Oslo", "Lyon", "?"]})  # unseen categories and missing values
    rows.to_csv(files / "rows.csv", index=False)
    argv = ["predict", "--release", str(files / "open.npz"), "--coef", str(files / "c.json"), "--data",
            str(files / "rows.csv"), "--out", str(files / "p.csv")]
    assert main(argv) == 0
    predicted = pd.read_csv(files / "p.csv")
    assert len(predicted) == len(rows) and predicted["prediction"].notna().all()


def test_cli_synth_states_the_rows_a_closed_schema_leaves_out(files, capsys):
    assert main(_synth(files, "closed", "--schema", str(files / "closed.json"))) == 0
    out, err = capsys.readouterr()
    release = Release.load(files / "closed.npz")
    _check_statements(release.spec)
    for x in release.spec["excluded"]:  # on stderr although --quiet, and in the summary
        assert f"warning: rows left out of the release: {x['statement']}" in err
        assert f"rows left out: {x['statement']}" in out
    assert main(["inspect", str(files / "closed.npz")]) == 0
    out = capsys.readouterr().out
    assert all(f"rows left out: {x['statement']}" in out for x in release.spec["excluded"])
    assert main(["inspect", str(files / "closed.npz"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["excluded"] == release.spec["excluded"]
    assert main(["fit", "--release", str(files / "closed.npz"), "--target", "hours", "--json",
                 str(files / "cc.json"), "--quiet"]) == 0
    pd.DataFrame({"age": ["30", "?"], "job": ["nurse", "astronaut"], "city": ["Lyon", "Paris"]}).to_csv(
        files / "rows2.csv", index=False)
    argv = ["predict", "--release", str(files / "closed.npz"), "--coef", str(files / "cc.json"), "--data",
            str(files / "rows2.csv"), "--out", str(files / "p2.csv")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "column 'age': a missing value, and the column has no missing level (rule \"missing\": \"drop\")" in err
    assert "column 'job': a category not in the spec, and the column has no <other> level" in err
    assert "missing values" not in err and "astronaut" not in err and not (files / "p2.csv").exists()

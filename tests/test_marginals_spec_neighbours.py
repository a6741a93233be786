"""Issue 23, deliverable 1: a value's key depends on that value alone, so a table D and D plus one
row release the same keys for the rows they share (the spec inference, the CLI's raw path and the
Python API on ``pd.read_csv``'s default dtypes), with a broken control that brings the old
dtype-dependent keying back and is caught."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import marginals.spec.columns as spec_columns
from aim import Release
from aim.raw import synthesize
from ddssp.cli import main
from marginals import Accountant
from marginals.dataset import read_csv_file
from marginals.spec.columns import series_keys
from marginals.spec.infer import infer_spec

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning",
                                        "ignore::aim.release.NotPrivateWarning",
                                        "ignore::marginals.spec.infer.SpecInferenceWarning")
FAST = {"rounds": 4, "max_iters": 10, "final_iters": 20}


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    """A CSV written byte for byte (str cells as UTF-8, bytes cells as they are: not UTF-8 on purpose)."""
    lines = [",".join(header).encode()]
    lines += [b",".join(c if isinstance(c, bytes) else str(c).encode() for c in row) for row in rows]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def issue_table(n: int = 2000, seed: int = 0) -> list[list]:
    """The issue's table D: ``flag`` in {true, false}, ``rating`` in {"4.50", "3.50", "2.50"}."""
    rng = np.random.default_rng(seed)
    return [[f, r] for f, r in zip(rng.choice(["true", "false"], n), rng.choice(["4.50", "3.50", "2.50"], n))]


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("neighbours")
    rows = issue_table()
    d = write_csv(folder / "d.csv", ["flag", "rating"], rows)
    d1 = write_csv(folder / "d1.csv", ["flag", "rating"], rows + [["maybe", "unrated"]])
    return d, d1


SCHEMA = {"columns": {"flag": "categorical", "rating": "categorical"}}


def _released(spec: dict) -> dict:
    return {c: v.get("categories") for c, v in spec["columns"].items()}


def test_cli_raw_path_releases_the_same_keys_for_neighbours(neighbours, tmp_path):
    """`dp-marginals synth --data raw.csv` on D and on D + (maybe, unrated): the same categories,
    the same synthetic keys (today: ['False', 'True'] vs ['false', 'true'], '2.5' vs '2.50')."""
    schema = tmp_path / "schema.json"
    schema.write_text('{"columns": {"flag": "categorical", "rating": "categorical"}}')
    specs, synth = [], []
    for i, data in enumerate(neighbours):
        out, rel = tmp_path / f"s{i}.csv", tmp_path / f"r{i}.npz"
        argv = ["synth", "--data", str(data), "--epsilon", "2", "--out", str(out), "--release", str(rel),
                "--insecure-seed", "7", "--sample-seed", "1", "--quiet", "--schema", str(schema)]
        assert main(argv) == 0
        specs.append(_released(Release.load(rel).spec))
        synth.append(read_csv_file(out, text=True))
    assert specs[0] == specs[1] == {"flag": ["false", "true"], "rating": ["2.5", "3.5", "4.5"]}
    for frame in synth:
        assert set(frame["flag"]) <= {"false", "true", "<other>", ""}
        assert set(frame["rating"]) <= {"2.5", "3.5", "4.5", "<other>", ""}


def test_cli_raw_path_without_a_schema(neighbours, tmp_path):
    """No schema: the type is inferred too; flag is categorical with the same keys, rating numeric
    with the same edges on both sides."""
    specs = []
    for i, data in enumerate(neighbours):
        argv = ["synth", "--data", str(data), "--epsilon", "2", "--out", str(tmp_path / f"s{i}.csv"),
                "--release", str(tmp_path / f"r{i}.npz"), "--insecure-seed", "7", "--quiet"]
        assert main(argv) == 0
        specs.append(Release.load(tmp_path / f"r{i}.npz").spec["columns"])
    assert specs[0]["flag"]["categories"] == specs[1]["flag"]["categories"] == ["false", "true"]
    assert specs[0]["rating"]["type"] == specs[1]["rating"]["type"] == "numeric"
    assert specs[0]["rating"]["edges"] == specs[1]["rating"]["edges"]


def test_python_api_on_default_pandas_dtypes(neighbours):
    """`aim.synthesize(pd.read_csv(...))`: pandas makes ``flag`` bool and ``rating`` float64 on D,
    text on D + (maybe, unrated); the released keys are the same."""
    out = []
    for data in neighbours:
        raw = pd.read_csv(data)
        release, synthetic = synthesize(raw, epsilon=2.0, schema=SCHEMA, insecure_seed=7, sample_seed=1, **FAST)
        out.append((_released(release.spec), synthetic))
    assert pd.read_csv(neighbours[0])["flag"].dtype == bool  # the dtypes really differ
    assert out[0][0] == out[1][0] == {"flag": ["false", "true"], "rating": ["2.5", "3.5", "4.5"]}
    for _, synthetic in out:
        assert set(synthetic["flag"].dropna()) <= {"false", "true", "<other>"}


def old_series_keys(s: pd.Series) -> np.ndarray:
    """The keying before issue 23 (the column's dtype decides the text): the broken control."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iufb":
        return s.to_numpy().astype(str).astype(object)
    return s.astype(str).str.strip().to_numpy(dtype=object)


def test_broken_control_the_old_keying_is_caught(neighbours, monkeypatch):
    """With the old dtype-dependent `series_keys` patched in, the neighbours release different keys:
    the comparison above can fail, and every keying path goes through `series_keys`."""
    monkeypatch.setattr(spec_columns, "series_keys", old_series_keys)
    specs = []
    for data in neighbours:
        spec = infer_spec(pd.read_csv(data), Accountant(10.0), rho=1.0, delta=1e-6, schema=SCHEMA, rng=7)
        specs.append(_released(spec.to_spec()))
    assert specs[0]["flag"] == ["False", "True"] and specs[1]["flag"] == ["false", "true"]
    assert specs[0]["rating"] != specs[1]["rating"]


# --- property: generated tables plus one adversarial row ------------------------------------------

ADVERSARIAL = ["maybe", "unrated", "", "NaN", "1e-3", "TRUE", str(2**53 + 1), "x" * 5000, b"\xff\xfe\xe9t\xe9"]
FLAGS = ["true", "false", "TRUE", "False", " true "]
RATINGS = ["4.50", "3.5", "2.50", "007", "1e1", "+2.5"]
IDS = [str(2**53 + k) for k in (1, 2, 3, 5)]  # distinct only when never read through float
PROPERTY_SCHEMA = {"columns": {"flag": None, "rating": "categorical", "n": None, "id": "categorical"}}


@st.composite
def neighbour_tables(draw) -> tuple[list[str], list[list], list]:
    n = draw(st.integers(600, 900))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    flags = draw(st.lists(st.sampled_from(FLAGS), min_size=1, max_size=3, unique=True))
    ratings = draw(st.lists(st.sampled_from(RATINGS), min_size=2, max_size=4, unique=True))
    columns = [rng.choice(flags, n), rng.choice(ratings, n), rng.integers(10, 1000, n).astype(str), rng.choice(IDS, n)]
    extra = [draw(st.sampled_from(ADVERSARIAL)) for _ in columns]
    return ["flag", "rating", "n", "id"], [list(r) for r in zip(*columns)], extra


def _key(value) -> str | None:
    return series_keys(pd.Series([value], dtype=object))[0]


def _infer(df: pd.DataFrame, schema: dict) -> dict:
    acct = Accountant(10.0)
    spec = infer_spec(df, acct, rho=0.4, delta=1e-6, schema=schema, rng=11).to_spec()
    return spec["columns"]


def assert_same_shared_keys(a: dict, b: dict, extra: dict) -> None:
    """What must hold exactly for neighbours: same columns and types, the same released categories
    (up to the added row's own key), the same numeric edges."""
    assert a.keys() == b.keys()
    for name in a:
        assert a[name]["type"] == b[name]["type"], name
        if a[name]["type"] == "categorical":
            new = {extra[name]} - {None}
            left, right = set(map(str, a[name]["categories"])), set(map(str, b[name]["categories"]))
            assert left - new == right - new and not (left ^ right) - new, (name, left, right)
        else:
            assert a[name]["edges"] == b[name]["edges"] and a[name]["integer"] == b[name]["integer"], name


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(neighbour_tables())
def test_one_adversarial_row_changes_no_shared_key(tmp_path, table):
    header, rows, extra = table
    d = write_csv(tmp_path / "d.csv", header, rows)
    d1 = write_csv(tmp_path / "d1.csv", header, rows + [extra])
    keys = {name: _key(v) for name, v in zip(header, extra)}
    text0, text1 = read_csv_file(d, text=True), read_csv_file(d1, text=True)
    spec0, spec1 = _infer(text0, PROPERTY_SCHEMA), _infer(text1, PROPERTY_SCHEMA)
    assert_same_shared_keys(spec0, spec1, keys)
    assert set(map(str, spec0["id"]["categories"])) <= set(IDS)  # ids above 2^53 stay exact and distinct
    assert spec0["n"]["type"] == "numeric" and spec0["flag"]["type"] == "categorical"
    # every shared row maps to the same key on both sides
    from marginals import Discretizer
    labels = []
    for spec in (spec0, spec1):
        disc = Discretizer({"columns": spec})
        codes = disc.transform_df(text0)
        labels.append(pd.DataFrame({c: np.array(disc.labels(c), dtype=object)[codes[c]] for c in codes},
                                   index=codes.index))
    shared = labels[0].index.intersection(labels[1].index)
    for name in ("flag", "rating", "id"):
        both = set(map(str, spec0[name]["categories"])) & set(map(str, spec1[name]["categories"]))
        left, right = labels[0].loc[shared, name], labels[1].loc[shared, name]
        mask = left.isin(both)
        assert (left[mask] == right[mask]).all() and right.isin(both).eq(mask).all(), name
    # the Python API on pandas's default dtypes (ids left out: a float column cannot hold them)
    api_schema = {"columns": {k: v for k, v in PROPERTY_SCHEMA["columns"].items() if k != "id"}}
    api = [pd.read_csv(p, encoding_errors="backslashreplace").drop(columns="id") for p in (d, d1)]
    api0, api1 = _infer(api[0], api_schema), _infer(api[1], api_schema)
    assert api0 == _infer(text0.drop(columns="id"), api_schema)  # the same spec whatever the reader
    assert_same_shared_keys(api0, api1, keys)


@pytest.mark.parametrize("value", ADVERSARIAL, ids=lambda v: repr(v)[:12])
def test_every_adversarial_value_in_every_column(tmp_path, value):
    """Each adversarial value of the issue, added in all four columns at once (not left to the draw)."""
    rng = np.random.default_rng(3)
    n = 700
    columns = [rng.choice(FLAGS, n), rng.choice(RATINGS, n), rng.integers(10, 1000, n).astype(str), rng.choice(IDS, n)]
    header, rows = ["flag", "rating", "n", "id"], [list(r) for r in zip(*columns)]
    d = read_csv_file(write_csv(tmp_path / "d.csv", header, rows), text=True)
    d1 = read_csv_file(write_csv(tmp_path / "d1.csv", header, rows + [[value] * 4]), text=True)
    spec0, spec1 = _infer(d, PROPERTY_SCHEMA), _infer(d1, PROPERTY_SCHEMA)
    assert_same_shared_keys(spec0, spec1, dict.fromkeys(header, _key(value)))
    assert spec0["flag"]["categories"] == ["false", "true"] and len(spec0["id"]["categories"]) == len(IDS)
    assert spec0["rating"]["categories"] == ["10", "2.5", "3.5", "4.5", "7"]


# --- the canonical keys themselves -------------------------------------------------------------


@pytest.mark.parametrize("values, key", [
    (["4.50", 4.5, "4.5", np.float64(4.5), " 4.500 ", "+4.5", "45e-1"], "4.5"),
    ([True, "true", "TRUE", "True", " tRuE ", np.bool_(True)], "true"),
    ([False, "false", "FALSE"], "false"),
    (["7", 7, 7.0, "7.00", "007", "7e0", np.int64(7), np.uint8(7)], "7"),
    (["1e-3", 0.001, "0.0010"], "0.001"),
    ([str(2**53 + 1), 2**53 + 1, np.int64(2**53 + 1)], "9007199254740993"),
    (["-0", -0.0, "0.000", 0], "0"),
    (["inf", float("inf"), "Infinity"], "inf"),
    (["1e300", 1e300], "1" + "0" * 300),
    ([None, np.nan, pd.NA, pd.NaT, "", "   ", "NaN", "nan", "NA", "null", "None", "N/A"], None),
    ([b"caf\xe9", "caf\\xe9"], "caf\\xe9"),
    (["  Jane Doe  ", b"Jane Doe"], "Jane Doe"),
])
def test_canonical_keys(values, key):
    assert [_key(v) for v in values] == [key] * len(values)
    assert list(series_keys(pd.Series(values, dtype=object))) == [key] * len(values)


def test_keys_do_not_depend_on_the_column_dtype():
    numbers = [4.5, 3.0, 2.5, None]
    forms = [pd.Series(numbers), pd.Series(numbers, dtype=object), pd.Series(["4.50", "3", "2.50", ""]),
             pd.Series(["4.5", "3.0", "2.5", None], dtype="string"), pd.Series(numbers, dtype="Float64")]
    assert all(list(series_keys(s)) == ["4.5", "3", "2.5", None] for s in forms)
    ints = [pd.Series([2**62 + 1, 5]), pd.Series([2**62 + 1, 5], dtype="Int64"), pd.Series([str(2**62 + 1), "5"]),
            pd.Series([2**62 + 1, 5], dtype=object), pd.Series([2**62 + 1, 5], dtype=np.uint64)]
    assert all(list(series_keys(s)) == [str(2**62 + 1), "5"] for s in ints)  # never through float
    bools = [pd.Series([True, False]), pd.Series(["TRUE", "false"]), pd.Series([True, False], dtype="boolean"),
             pd.Series([True, "False"], dtype=object)]
    assert all(list(series_keys(s)) == ["true", "false"] for s in bools)
    assert list(series_keys(pd.Series([1, True, 1.0, "1"], dtype=object))) == ["1", "true", "1", "1"]


def test_long_and_odd_cells_have_defined_keys():
    long_text, long_number = "é" * 100_000, "9" * 5000
    keys = series_keys(pd.Series([long_text, long_number, "1e999999999999999999", "1e-400", 10**5000,
                                  "\ud800", "1_000", "٣"], dtype=object))
    assert keys[0] == long_text and keys[1] == "9.%se+4999" % ("9" * 4999)
    assert keys[2] == "1e+999999999999999999" and keys[3] == "0" and keys[4].startswith("0x")
    assert list(keys[5:]) == ["\ud800", "1_000", "٣"]  # text, not numbers


def test_key_numbers_follow_the_keys():
    from marginals.cell_keys import key_numbers
    keys = series_keys(pd.Series(["1", "x", None, "inf", "4.50", "TRUE", str(2**53 + 1)], dtype=object))
    got = key_numbers(keys)
    assert got[0] == 1 and math.isnan(got[1]) and math.isnan(got[2]) and got[3] == math.inf and got[4] == 4.5
    assert math.isnan(got[5]) and got[6] == float(2**53)  # a boolean is not a number; big ids round as numbers

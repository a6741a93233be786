"""Specs drafted from public schemas only: the accepted schema forms, what stays open, clear errors,
and the ``dp-marginals spec`` command."""

from __future__ import annotations

import json

import pytest

from ddssp.cli import main
from marginals import Discretizer
from marginals.spec.columns import SpecError
from marginals.spec.public import draft_spec, read_schema, spec_gaps


def test_a_list_of_names_leaves_every_type_open():
    draft = draft_spec(["age", "job"])
    assert list(draft["columns"]) == ["age", "job"]
    assert spec_gaps(draft) == {"age": ["type"], "job": ["type"]}
    assert draft["missing_markers"] == ["?"] and draft["unseen"] == "other"


def test_declared_columns_are_complete_and_bounds_get_equal_bins():
    schema = {"missing_markers": ["n/a"], "columns": {
        "age": {"type": "integer", "lo": 0, "hi": 100},
        "job": {"type": "string", "categories": ["a", "b"], "missing": "level"},
        "income": "numeric",
        "city": "categorical",
        "note": None,
    }}
    draft = draft_spec(schema, bins=4)
    assert draft["columns"]["age"] == {"type": "numeric", "lo": 0, "hi": 100, "integer": True, "bins": 4}
    assert spec_gaps(draft) == {"age": [], "job": [], "income": ["bounds"], "city": ["categories"], "note": ["type"]}
    complete = {**draft, "columns": {k: draft["columns"][k] for k in ("age", "job")}}
    d = Discretizer.from_spec(complete)
    assert d.labels("age") == ["[0, 25)", "[25, 50)", "[50, 75)", "[75, 100]", "<missing>"]  # by default: a level
    assert d.labels("job") == ["a", "b", "<other>", "<missing>"]


def test_frictionless_table_schema():
    schema = {"fields": [
        {"name": "age", "type": "integer", "constraints": {"minimum": 17, "maximum": 90}},
        {"name": "sex", "type": "string", "constraints": {"enum": ["F", "M"]}},
        {"name": "fnlwgt", "type": "number"},
        {"name": "anything", "type": "any"},
    ], "missingValues": ["", "?"]}
    draft = draft_spec(schema)
    assert draft["missing_markers"] == ["?"]
    assert draft["columns"]["age"] == {"type": "numeric", "lo": 17, "hi": 90, "integer": True, "bins": 10}
    assert draft["columns"]["sex"] == {"type": "categorical", "categories": ["F", "M"]}
    assert spec_gaps(draft) == {"age": [], "sex": [], "fnlwgt": ["bounds"], "anything": ["type"]}


def test_columns_as_a_list_of_objects_keep_their_order():
    parsed = read_schema({"columns": ["b", {"name": "a", "type": "numeric", "bins": 3}]})
    assert list(parsed["columns"]) == ["b", "a"] and parsed["columns"]["a"] == {"type": "numeric", "bins": 3}


@pytest.mark.parametrize(
    "schema, message",
    [
        ({"columns": {"x": "date"}}, r"column 'x': unknown type 'date'"),
        ({"columns": {"x": {"type": "numeric", "lo": 1}}}, r"column 'x': give both 'lo' and 'hi'"),
        ({"columns": {"x": {"type": "categorical", "aliases": {"y": "z"}}}}, r"'aliases' need declared 'categories'"),
        ({"columns": {"x": {"type": "numeric", "lo": 5, "hi": 1}}}, r"'lo' \(5\) must be below 'hi' \(1\)"),
        ({"columns": {"x": {"categories": ["a"]}}}, r"column 'x': key\(s\) \['categories'\] need a 'type'"),
        ({"columns": {"x": {"type": "numeric", "typo": 1}}}, r"column 'x': unknown key\(s\) \['typo'\]"),
        ({"columns": ["a", "a"]}, "a column name is repeated"),
        ({"columns": []}, "the schema names no columns"),
        ({"columns": {"a": "numeric"}, "extra": 1}, r"unknown top-level key\(s\) \['extra'\]"),
        ({"columns": {"x": {"type": "categorical", "categories": ["a", " a"]}}}, "duplicate categor"),
        (42, "a schema is a list of column names"),
    ],
)
def test_bad_schemas_are_refused_with_a_clear_message(schema, message):
    with pytest.raises(SpecError, match=message):
        draft_spec(schema)


def test_bins_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="bins must be an integer >= 1"):
        draft_spec(["a"], bins=0)


def test_schema_files_name_themselves_in_errors(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"x": "date"}}))
    with pytest.raises(SpecError, match=r"s\.json: column 'x': unknown type"):
        read_schema(tmp_path / "s.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SpecError, match="broken.json"):
        read_schema(tmp_path / "broken.json")


def test_cli_spec_writes_the_draft_and_lists_the_gaps(tmp_path, capsys):
    (tmp_path / "public.json").write_text(json.dumps({"columns": {"age": {"type": "integer", "lo": 0, "hi": 90},
                                                                  "job": "categorical"}}))
    assert main(["spec", "--schema", str(tmp_path / "public.json"), "--bins", "3", "--out", str(tmp_path / "spec.json")]) == 0
    draft = json.loads((tmp_path / "spec.json").read_text())
    assert draft["columns"]["age"] == {"type": "numeric", "lo": 0, "hi": 90, "integer": True, "bins": 3}
    err = capsys.readouterr().err
    assert "1 of 2 column(s) need more: job (categories)" in err
    assert main(["spec", "--schema", str(tmp_path / "public.json")]) == 0  # no --out: printed
    assert json.loads(capsys.readouterr().out) == draft | {"columns": {**draft["columns"], "age": {**draft["columns"]["age"], "bins": 10}}}


def test_cli_spec_bad_schema_exits_2_naming_the_file(tmp_path, capsys):
    (tmp_path / "bad.json").write_text(json.dumps({"columns": {"x": "date"}}))
    assert main(["spec", "--schema", str(tmp_path / "bad.json")]) == 2
    assert "bad.json: column 'x': unknown type 'date'" in capsys.readouterr().err
    assert main(["spec", "--schema", str(tmp_path / "bad.json"), "--out", str(tmp_path / "bad.json")]) == 2
    assert "would overwrite the input --schema" in capsys.readouterr().err


def test_the_adult_example_schema_names_the_raw_columns_in_order():
    from pathlib import Path

    from benchmarks.data import ADULT_RAW_COLUMNS

    draft = draft_spec(Path(__file__).resolve().parent.parent / "examples" / "adult-schema.json")
    assert tuple(draft["columns"]) == ADULT_RAW_COLUMNS and draft["missing_markers"] == ["?"]
    gaps = spec_gaps(draft)
    assert gaps["age"] == ["bounds"] and draft["columns"]["age"]["integer"] is True
    assert gaps["workclass"] == ["categories"]

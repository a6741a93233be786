"""Domain: construction, the domain.json format (load / atomic save), sub-domains, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import marginals.domain as domain_module
from marginals import Domain
from benchmarks.data import data_dir

SHARED = data_dir()
SHARED_DOMAINS = sorted(SHARED.glob("*/domain.json")) if SHARED is not None else []


@pytest.fixture
def dom() -> Domain:
    return Domain(("a", "b", "c", "d"), (2, 3, 4, 5))


# --- construction -------------------------------------------------------------------------


def test_construction_normalises_to_tuples_of_int():
    d = Domain(["x", "y"], [2, 7])
    assert d.attrs == ("x", "y") and d.shape == (2, 7)
    assert all(type(m) is int for m in d.shape)
    assert len(d) == 2 and list(d) == ["x", "y"] and "x" in d and "z" not in d
    assert d.to_dict() == {"x": 2, "y": 7}
    assert Domain.from_dict({"y": 7, "x": 2}).attrs == ("y", "x")


def test_duplicate_names_rejected():
    with pytest.raises(ValueError, match=r"duplicate attribute names \['a'\]"):
        Domain(("a", "b", "a"), (2, 2, 2))


@pytest.mark.parametrize("size", [0, -3])
def test_size_below_one_rejected(size):
    with pytest.raises(ValueError, match=rf"attribute 'b' must have at least 1 level, got {size}"):
        Domain(("a", "b"), (2, size))


def test_length_mismatch_rejected():
    with pytest.raises(ValueError, match=r"3 attributes but 2 sizes"):
        Domain(("a", "b", "c"), (2, 3))


@pytest.mark.parametrize("name", ["", 5])
def test_bad_attribute_name_rejected(name):
    with pytest.raises(ValueError, match="attribute names must be non-empty strings"):
        Domain(("a", name), (2, 2))


def test_single_level_attribute_allowed():
    assert Domain(("a",), (1,)).size() == 1


# --- load / save ----------------------------------------------------------------------------


def _check_round_trip(src: Path, tmp_path: Path) -> None:
    raw = json.loads(src.read_text(encoding="utf-8"))
    d = Domain.load(src)
    assert d.attrs == tuple(raw.keys())  # file order is domain order
    assert d.shape == tuple(raw.values())
    out = tmp_path / "copy" / "domain.json"  # parent folder is created
    d.save(out)
    again = json.loads(out.read_text(encoding="utf-8"))
    assert list(again.items()) == list(raw.items())
    assert Domain.load(out) == d


@pytest.mark.parametrize("path", SHARED_DOMAINS, ids=[p.parent.name for p in SHARED_DOMAINS])
def test_shared_domain_files_round_trip(path, tmp_path):
    _check_round_trip(path, tmp_path)


def test_domain_json_format_round_trip(tmp_path):
    # the format of the team's files: one JSON object attribute -> levels, in column order
    src = tmp_path / "domain.json"
    src.write_text('{"education": 16, "age": 32, "sex": 2, "native-country": 42, "income>50K": 2}')
    _check_round_trip(src, tmp_path)


def test_load_rejects_malformed_json(tmp_path):
    path = tmp_path / "domain.json"
    path.write_text('{"a": 2, "b": ')
    with pytest.raises(ValueError, match=r"domain.json: not valid JSON \(Expecting value"):
        Domain.load(path)


def test_load_rejects_non_object(tmp_path):
    p = tmp_path / "domain.json"
    p.write_text("[2, 3]")
    with pytest.raises(ValueError, match="must hold a JSON object, got list"):
        Domain.load(p)


@pytest.mark.parametrize("value", ["3", 2.5, True, None])
def test_load_rejects_non_integer_size(tmp_path, value):
    p = tmp_path / "domain.json"
    p.write_text(json.dumps({"a": 2, "b": value}))
    with pytest.raises(ValueError, match=r"attribute 'b' has a non-integer size"):
        Domain.load(p)


def test_load_rejects_bad_sizes_and_duplicates(tmp_path):
    p = tmp_path / "domain.json"
    p.write_text('{"a": 2, "b": 0}')
    with pytest.raises(ValueError, match="at least 1 level"):
        Domain.load(p)


def test_save_replaces_existing_file_whole_and_leaves_no_temp(tmp_path, dom):
    p = tmp_path / "domain.json"
    p.write_text(json.dumps({f"long_attribute_{i}": 100 + i for i in range(200)}))  # much longer
    dom.save(p)
    assert json.loads(p.read_text()) == {"a": 2, "b": 3, "c": 4, "d": 5}  # no leftover tail
    assert sorted(os.listdir(tmp_path)) == ["domain.json"]


def test_save_writes_through_a_temp_file(tmp_path, dom, monkeypatch):
    moves = []
    real_replace = os.replace

    def spy(src, dst):
        moves.append((Path(src), Path(dst)))
        assert Path(src).read_text() == json.dumps(dom.to_dict())  # complete before the rename
        real_replace(src, dst)

    monkeypatch.setattr(domain_module.os, "replace", spy)
    target = tmp_path / "domain.json"
    dom.save(target)
    assert len(moves) == 1
    src, dst = moves[0]
    assert dst == target and src != target and src.parent == tmp_path
    assert not src.exists()
    assert sorted(os.listdir(tmp_path)) == ["domain.json"]


def test_failed_save_keeps_old_file_and_removes_temp(tmp_path, dom, monkeypatch):
    p = tmp_path / "domain.json"
    p.write_text('{"old": 3}')

    def broken(src, dst):
        raise OSError("disk went away")

    monkeypatch.setattr(domain_module.os, "replace", broken)
    with pytest.raises(OSError, match="disk went away"):
        dom.save(p)
    assert p.read_text() == '{"old": 3}'
    assert sorted(os.listdir(tmp_path)) == ["domain.json"]


# --- sub-domains ------------------------------------------------------------------------------


def test_size_of_subsets(dom):
    assert dom.size() == 2 * 3 * 4 * 5
    assert dom.size(()) == 1
    assert dom.size(("c",)) == 4
    assert dom.size(("d", "a")) == 10
    assert dom.size(["b", "c", "d"]) == 60
    assert dom.size(("a", "b", "c", "d")) == 120


def test_project_keeps_the_given_order(dom):
    p = dom.project(("d", "a", "c"))
    assert p.attrs == ("d", "a", "c") and p.shape == (5, 2, 4)
    assert dom.project(()).attrs == ()


def test_canonical_orders_by_domain(dom):
    assert dom.canonical(("d", "b", "a")) == ("a", "b", "d")
    assert dom.canonical([]) == ()


def test_axes(dom):
    assert dom.axes(("c", "a")) == (2, 0)


def test_marginalize(dom):
    m = dom.marginalize(("b", "d"))
    assert m.attrs == ("a", "c") and m.shape == (2, 4)
    assert dom.marginalize(()) == dom


def test_merge(dom):
    other = Domain(("e", "c", "f"), (6, 4, 7))
    m = dom.merge(other)
    assert m.attrs == ("a", "b", "c", "d", "e", "f")
    assert m.shape == (2, 3, 4, 5, 6, 7)
    assert dom.merge(dom) == dom


def test_merge_conflict(dom):
    with pytest.raises(ValueError, match=r"cannot merge domains: 'c' has 4 vs 9 levels"):
        dom.merge(Domain(("c",), (9,)))


def test_unknown_attribute_errors(dom):
    with pytest.raises(KeyError, match=r"unknown attribute 'zz'"):
        dom["zz"]
    for call in (dom.size, dom.project, dom.canonical, dom.marginalize, dom.axes, dom.check):
        with pytest.raises(ValueError, match=r"unknown attribute\(s\) \['zz'\]; the domain has \['a', 'b', 'c', 'd'\]"):
            call(("a", "zz"))


def test_repeated_attribute_error(dom):
    with pytest.raises(ValueError, match="repeated attribute"):
        dom.project(("a", "b", "a"))


def test_repr_lists_attributes(dom):
    assert repr(dom) == "Domain(a: 2, b: 3, c: 4, d: 5)"


def test_saved_files_get_the_usual_permissions(tmp_path):
    """Atomic writes go through a private temp file; the result must not stay 0600."""
    import os
    import stat

    umask = os.umask(0o022)
    try:
        Domain(("a",), (2,)).save(tmp_path / "d.json")
    finally:
        os.umask(umask)
    mode = stat.S_IMODE(os.stat(tmp_path / "d.json").st_mode)
    assert mode == 0o666 & ~umask or mode == 0o644


# --- ordinal metadata (public: which attributes are ordered) -----------------------------------


def test_ordinal_metadata_is_normalised_and_leaves_equality_and_hashing_alone(dom):
    meta = Domain(("a", "b", "c", "d"), (2, 3, 4, 5), ordinal=["d", "b"])
    assert meta.ordinal == (("b", 3), ("d", 5))  # domain order, every level ordered
    assert meta == dom and hash(meta) == hash(dom) and {dom: 1}[meta] == 1
    assert dom.ordinal is None and dom.ordered_levels("b") is None
    assert meta.ordered_levels("b") == 3 and meta.ordered_levels("a") is None
    partial = dom.with_ordinal({"c": 2})  # codes 0, 1 ordered; 2, 3 extra levels
    assert partial.ordinal == (("c", 2),) and partial == dom
    assert dom.with_ordinal([]).ordinal == ()  # declared: nothing is ordered (not unknown)
    with pytest.raises(ValueError, match="unknown attribute 'z'"):
        meta.ordered_levels("z")


def test_sub_domains_keep_the_ordinal_metadata(dom):
    meta = dom.with_ordinal({"b": 3, "c": 2})
    assert meta.project(("c", "a")).ordinal == (("c", 2),)
    assert meta.marginalize(("b",)).ordinal == (("c", 2),)
    assert meta.project(("a",)).ordinal == ()  # still declared
    assert dom.project(("c",)).ordinal is None
    other = Domain(("d", "e"), (5, 2), ordinal=["e"])
    assert meta.merge(other).ordinal == (("b", 3), ("c", 2), ("e", 2))
    assert dom.merge(other).ordinal is None  # only one side knows: unknown
    import pickle

    assert pickle.loads(pickle.dumps(meta)).ordinal == meta.ordinal


@pytest.mark.parametrize("ordinal, message", [
    (["z"], "ordinal attribute 'z' is not in the domain"),
    (["b", "b"], "ordinal attribute 'b' is listed twice"),
    ({"c": 5}, "ordinal attribute 'c': its number of ordered levels must be an integer from 1 to its 4 levels, got 5"),
    ({"c": 0}, "ordinal attribute 'c'.*got 0"),
    ({"c": True}, "ordinal attribute 'c'.*got True"),
    ({"c": 1.5}, "ordinal attribute 'c'.*got 1.5"),
    ("c", "ordinal must be a list of attribute names or a mapping"),
    (3, "ordinal must be a list of attribute names or a mapping"),
    ([5], "ordinal attribute 5 is not in the domain"),
])
def test_malformed_ordinal_metadata_is_refused_naming_the_attribute(dom, ordinal, message):
    with pytest.raises(ValueError, match=message):
        dom.with_ordinal(ordinal)


def test_domain_json_extended_form_round_trips(tmp_path):
    plain = tmp_path / "plain.json"
    plain.write_text('{"age": 10, "job": 4, "sex": 2}')
    d = Domain.load(plain)
    assert d.ordinal is None
    d.save(tmp_path / "again.json")  # a domain without metadata is written in the plain form
    assert json.loads((tmp_path / "again.json").read_text()) == {"age": 10, "job": 4, "sex": 2}
    full = {"attributes": {"age": 10, "job": 4, "sex": 2}, "ordinal": ["age", "sex"]}
    partial = {"attributes": {"age": 10, "job": 4, "sex": 2}, "ordinal": {"age": 8}}  # age: 8 bins + 2 extra levels
    for form, expected in ((full, (("age", 10), ("sex", 2))), (partial, (("age", 8),))):
        src = tmp_path / "extended.json"
        src.write_text(json.dumps(form))
        loaded = Domain.load(src)
        assert loaded.attrs == ("age", "job", "sex") and loaded.shape == (10, 4, 2)
        assert loaded.ordinal == expected and loaded == d
        loaded.save(tmp_path / "out.json")
        assert json.loads((tmp_path / "out.json").read_text()) == form  # the same form back
        assert Domain.load(tmp_path / "out.json").ordinal == expected


@pytest.mark.parametrize("content, message", [
    ({"attributes": {"age": 10}, "ordinal": ["agee"]}, r"x\.json: Domain: ordinal attribute 'agee' is not in the domain"),
    ({"attributes": {"age": 10}, "ordinal": {"age": 11}}, r"x\.json: Domain: ordinal attribute 'age': .* got 11"),
    ({"attributes": {"age": 10}, "ordinal": "age"}, r"x\.json: Domain: ordinal must be a list"),
    ({"attributes": {"age": 10}, "ordered": ["age"]}, r"x\.json: unknown key\(s\) \['ordered'\] in the extended domain form"),
    ({"attributes": {"age": "10"}}, r"x\.json: attribute 'age' has a non-integer size"),
])
def test_domain_json_malformed_metadata_is_a_clear_error(tmp_path, content, message):
    p = tmp_path / "x.json"
    p.write_text(json.dumps(content))
    with pytest.raises(ValueError, match=message):
        Domain.load(p)

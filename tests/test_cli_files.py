"""Hostile and careless files at the command line: every case exits 2 with one line naming the
file (or flag), and nothing is written; outputs never overwrite inputs; multi-file outputs are
all-or-nothing; coded data is private (0600)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

import marginals.files
from ddssp.cli import main
from marginals.datasets import demo_dataset
from marginals.domain import Domain, UnknownAttributeError
from marginals.files import AtomicOutputs, write_text_atomic


@pytest.fixture(scope="module")
def coded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("coded")
    data = demo_dataset(n=400, seed=4)
    data.to_df().to_csv(folder / "mine.csv", index=False)
    data.domain.save(folder / "domain.json")
    return folder, data


RAW_SPEC = {
    "version": 1,
    "columns": {
        "age": {"type": "numeric", "lo": 0, "hi": 100, "bins": 4, "integer": True},
        "paid": {"type": "categorical", "categories": ["no", "yes"]},
    },
}


@pytest.fixture()
def raw(tmp_path):
    rng = np.random.default_rng(1)
    lines = ["age,paid"] + [f"{a},{p}" for a, p in zip(rng.integers(0, 101, 300), rng.choice(["no", "yes"], 300))]
    (tmp_path / "raw.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "spec.json").write_text(json.dumps(RAW_SPEC))
    return tmp_path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(folder.rglob("*"))}


def _refused(capsys, argv: list[str], watch: Path, *expected: str) -> str:
    """Run the CLI: exit 2, one line containing every ``expected`` text, and ``watch`` unchanged."""
    before = _snapshot(watch)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dp-marginals: error: ") and "Traceback" not in err, err
    for text in expected:
        assert text in lines[0], lines[0]
    assert _snapshot(watch) == before  # nothing written, nothing changed, no temporary file left
    return lines[0]


def _synth(folder: Path, data: str, domain: str, *extra: str) -> list[str]:
    return ["synth", "--data", data, "--domain", domain, "--quiet", "--epsilon", "1",
            "--out", str(folder / "out" / "s.csv"), "--release", str(folder / "out" / "r.npz"), *extra]


# --- outputs never overwrite inputs ------------------------------------------------------------


def test_synth_out_equal_to_data_is_refused(coded, capsys, tmp_path):
    folder, _ = coded
    data, domain = str(folder / "mine.csv"), str(folder / "domain.json")
    argv = ["synth", "--data", data, "--domain", domain, "--out", data, "--release", str(tmp_path / "r.npz")]
    _refused(capsys, argv, folder, f"{data}: the output --out would overwrite the input --data")
    assert not (tmp_path / "r.npz").exists()
    # the same file through another spelling of the path
    other = str(folder / "." / "mine.csv")
    argv = ["synth", "--data", data, "--domain", domain, "--out", str(tmp_path / "s.csv"), "--release", other]
    _refused(capsys, argv, folder, "the output --release would overwrite the input --data")
    argv = ["synth", "--data", data, "--domain", domain, "--out", str(tmp_path / "s.csv"), "--release", domain]
    _refused(capsys, argv, folder, "would overwrite the input --domain")
    assert list(tmp_path.iterdir()) == []


def test_synth_out_equal_to_release_is_refused(coded, capsys, tmp_path):
    folder, _ = coded
    same = str(tmp_path / "both")
    argv = ["synth", "--data", str(folder / "mine.csv"), "--domain", str(folder / "domain.json"),
            "--out", same, "--release", same]
    _refused(capsys, argv, tmp_path, f"{same}: the outputs --out and --release are the same file")


def test_fit_json_equal_to_release_is_refused(coded, capsys, tmp_path):
    folder, _ = coded
    assert main(_synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"))) == 0
    release = tmp_path / "out" / "r.npz"
    _refused(capsys, ["fit", "--release", str(release), "--target", "income", "--json", str(release)], tmp_path,
             "the output --json would overwrite the input --release")


def test_discretize_outputs_never_overwrite_inputs(raw, capsys):
    spec_in_out_dir = raw / "coded" / "discretizer.json"
    spec_in_out_dir.parent.mkdir()
    spec_in_out_dir.write_text(json.dumps(RAW_SPEC))
    _refused(capsys, ["discretize", "--spec", str(spec_in_out_dir), "--data", str(raw / "raw.csv"),
                      "--out-dir", str(raw / "coded")], raw, "the output --out-dir would overwrite the input --spec")
    data_in_out_dir = raw / "coded" / "data.csv"
    data_in_out_dir.write_text((raw / "raw.csv").read_text())
    _refused(capsys, ["discretize", "--spec", str(raw / "spec.json"), "--data", str(data_in_out_dir),
                      "--out-dir", str(raw / "coded")], raw, "would overwrite the input --data")
    _refused(capsys, ["discretize", "--spec", str(raw / "spec.json"), "--decode", str(raw / "raw.csv"),
                      "--out", str(raw / "raw.csv")], raw, "the output --out would overwrite the input --decode")


# --- all or nothing ----------------------------------------------------------------------------


def test_synth_writes_release_and_csv_all_or_nothing(coded, capsys, tmp_path, monkeypatch):
    folder, _ = coded
    import ddssp.cli.synth as cli

    def fail_csv(path, text, mode=None):
        raise OSError(28, "No space left on device (simulated)")

    monkeypatch.setattr(cli, "write_text_atomic", fail_csv)  # the CSV fails after the release was written
    code = main(_synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json")))
    capsys.readouterr()
    assert code == 1
    assert list(tmp_path.iterdir()) == []  # no release, no CSV, no temporary file, no created folder


def test_synth_rolls_back_when_a_rename_fails(coded, capsys, tmp_path, monkeypatch):
    folder, _ = coded
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "r.npz").write_bytes(b"old release")
    real_replace = os.replace
    calls = []

    def flaky_replace(src, dst):
        calls.append(dst)
        if str(dst).endswith("s.csv"):
            raise OSError(5, "I/O error (simulated)")
        return real_replace(src, dst)

    monkeypatch.setattr(marginals.files.os, "replace", flaky_replace)
    assert main(_synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"))) == 1
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.npz"]
    assert (tmp_path / "out" / "r.npz").read_bytes() == b"old release"  # the old release is back


def test_discretize_writes_all_or_nothing(raw, capsys, monkeypatch):
    def fail(self, path):
        raise OSError(28, "No space left on device (simulated)")

    monkeypatch.setattr(Domain, "save", fail)  # domain.json fails after data.csv was staged
    code = main(["discretize", "--spec", str(raw / "spec.json"), "--data", str(raw / "raw.csv"),
                 "--out-dir", str(raw / "a" / "coded")])
    capsys.readouterr()
    assert code == 1
    assert not (raw / "a").exists()  # the folders it created are gone too


def test_atomic_outputs_restore_old_files_on_a_failed_commit(tmp_path, monkeypatch):
    (tmp_path / "a").write_text("old a")
    real_replace = os.replace

    def flaky(src, dst):
        if str(dst).endswith("b"):
            raise OSError("simulated")
        return real_replace(src, dst)

    monkeypatch.setattr(marginals.files.os, "replace", flaky)
    with pytest.raises(OSError, match="simulated"):
        with AtomicOutputs() as out:
            write_text_atomic(out.stage(tmp_path / "a"), "new a")
            write_text_atomic(out.stage(tmp_path / "b"), "new b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"] and (tmp_path / "a").read_text() == "old a"
    with pytest.raises(ValueError, match="given twice"):
        with AtomicOutputs() as out:
            out.stage(tmp_path / "c")
            out.stage(tmp_path / "." / "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


# --- permissions -------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_coded_data_is_private_released_files_follow_the_umask(raw, coded, capsys, tmp_path):
    old = os.umask(0o022)
    marginals.files._default_mode.cache_clear()
    try:
        assert main(["discretize", "--spec", str(raw / "spec.json"), "--data", str(raw / "raw.csv"),
                     "--out-dir", str(raw / "coded"), "--quiet"]) == 0
        assert _mode(raw / "coded" / "data.csv") == 0o600  # derived from private rows
        assert _mode(raw / "coded" / "domain.json") == 0o644  # public
        assert _mode(raw / "coded" / "discretizer.json") == 0o644
        folder, _ = coded
        assert main(_synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"))) == 0
        assert _mode(tmp_path / "out" / "s.csv") == 0o644 and _mode(tmp_path / "out" / "r.npz") == 0o644
    finally:
        os.umask(old)
        marginals.files._default_mode.cache_clear()
    capsys.readouterr()


# --- bad input never exits 1 -------------------------------------------------------------------


def test_huge_epsilon_is_bad_input(coded, capsys, tmp_path):
    folder, _ = coded
    _refused(capsys, _synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"), "--epsilon", "1e308"),
             tmp_path, "epsilon must be at most 1e+100, got 1e+308")


def test_discretize_out_dir_naming_a_file(raw, capsys):
    (raw / "taken").write_text("mine")
    _refused(capsys, ["discretize", "--spec", str(raw / "spec.json"), "--data", str(raw / "raw.csv"),
                      "--out-dir", str(raw / "taken")], raw, f"{raw / 'taken'}: --out-dir names an existing file")


def test_internal_key_error_exits_1_unknown_attribute_exits_2(coded, capsys, tmp_path, monkeypatch):
    import ddssp.cli.inspect as cli_inspect

    folder, _ = coded
    assert main(_synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"))) == 0
    release = str(tmp_path / "out" / "r.npz")

    def internal(rel):
        return {}["missing key"]  # a programming error, not bad input

    monkeypatch.setattr(cli_inspect, "release_report", internal)
    assert main(["inspect", release]) == 1
    assert "internal error: KeyError" in capsys.readouterr().err

    def unknown(rel):
        return rel.domain["no-such-attribute"]

    monkeypatch.setattr(cli_inspect, "release_report", unknown)
    assert main(["inspect", release]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"dp-marginals: error: unknown attribute 'no-such-attribute'; the domain has {list(Domain.load(folder / 'domain.json').attrs)}"
    with pytest.raises(UnknownAttributeError):
        Domain(("a",), (2,))["b"]
    assert issubclass(UnknownAttributeError, KeyError) and issubclass(UnknownAttributeError, ValueError)


# --- clear one-line messages that name the file --------------------------------------------------


def test_empty_csv(coded, capsys, tmp_path):
    folder, _ = coded
    (tmp_path / "empty.csv").write_text("")
    _refused(capsys, _synth(tmp_path, str(tmp_path / "empty.csv"), str(folder / "domain.json")), tmp_path,
             f"{tmp_path / 'empty.csv'}: empty file")
    (tmp_path / "header-only.csv").write_text(",".join(demo_dataset(n=10).domain.attrs) + "\n")
    _refused(capsys, _synth(tmp_path, str(tmp_path / "header-only.csv"), str(folder / "domain.json")), tmp_path,
             f"{tmp_path / 'header-only.csv'}: empty table: 0 rows")


def test_binary_csv_and_domain_files(coded, capsys, tmp_path):
    folder, _ = coded
    (tmp_path / "bin.csv").write_bytes(os.urandom(2000) + b"\0")
    _refused(capsys, _synth(tmp_path, str(tmp_path / "bin.csv"), str(folder / "domain.json")), tmp_path,
             f"{tmp_path / 'bin.csv'}: not a CSV file (binary content)")
    (tmp_path / "latin.csv").write_bytes(b"age\n\xe9\xe8\xff\xfe\n1\n2\n")
    _refused(capsys, _synth(tmp_path, str(tmp_path / "latin.csv"), str(folder / "domain.json")), tmp_path,
             f"{tmp_path / 'latin.csv'}: not a CSV file (not UTF-8 text")
    (tmp_path / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\0\0" + os.urandom(100))
    _refused(capsys, _synth(tmp_path, str(folder / "mine.csv"), str(tmp_path / "bin.json")), tmp_path,
             f"{tmp_path / 'bin.json'}: not a domain file (binary content)")


def test_domain_size_too_large_to_allocate(coded, capsys, tmp_path):
    folder, data = coded
    sizes = {**data.domain.to_dict(), "age": 10**12}
    (tmp_path / "huge.json").write_text(json.dumps(sizes))
    _refused(capsys, _synth(tmp_path, str(folder / "mine.csv"), str(tmp_path / "huge.json")), tmp_path,
             f"{tmp_path / 'huge.json'}: Domain: attribute 'age' has 1000000000000 levels, more than the 10,000,000 allowed")


@pytest.mark.parametrize("weight, shown", [("Infinity", "got inf"), ("1e300", "got 1e+300")])
def test_workload_weights_infinite_or_huge(coded, capsys, tmp_path, weight, shown):
    folder, _ = coded
    (tmp_path / "w.json").write_text(f'[[["age", "education"], {weight}]]')
    _refused(capsys, _synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"), "--workload",
                            str(tmp_path / "w.json")), tmp_path,
             f"{tmp_path / 'w.json'}: workload weight of ('age', 'education') must be a finite number <= 1e+09", shown)


@pytest.mark.parametrize("command, flag", [("synth", "--insecure-seed"), ("synth", "--sample-seed"),
                                           ("discretize", "--sample-seed"), ("discretize", "--seed")])
def test_negative_seed(coded, raw, capsys, tmp_path, command, flag):
    folder, _ = coded
    if command == "synth":
        argv = _synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"), flag, "-1")
    else:
        argv = ["discretize", "--spec", str(raw / "spec.json"), "--decode", str(raw / "raw.csv"), "--numeric",
                "uniform", flag, "-3", "--out", str(tmp_path / "d.csv")]
    _refused(capsys, argv, tmp_path, f"argument {flag}: must be a non-negative integer, got -")


def test_release_of_random_bytes(capsys, tmp_path):
    (tmp_path / "random.npz").write_bytes(os.urandom(5000))
    line = _refused(capsys, ["inspect", str(tmp_path / "random.npz")], tmp_path,
                    f"{tmp_path / 'random.npz'}: not a release file (not an .npz archive)")
    assert "pickle" not in line
    line = _refused(capsys, ["fit", "--release", str(tmp_path / "random.npz"), "--target", "x", "--json",
                             str(tmp_path / "c.json")], tmp_path, "not a release file")


def test_duplicate_csv_columns(coded, raw, capsys, tmp_path):
    folder, data = coded
    df = data.to_df()
    text = df.to_csv(index=False).replace("age", "income", 1)  # two 'income' columns, no 'age'
    (tmp_path / "dup.csv").write_text(text)
    _refused(capsys, _synth(tmp_path, str(tmp_path / "dup.csv"), str(folder / "domain.json")), tmp_path,
             f"{tmp_path / 'dup.csv'}: duplicate column(s) ['income']")
    (raw / "dup-raw.csv").write_text("age,paid,age\n3,no,4\n")
    _refused(capsys, ["discretize", "--spec", str(raw / "spec.json"), "--data", str(raw / "dup-raw.csv"),
                      "--out-dir", str(raw / "o")], raw, f"{raw / 'dup-raw.csv'}: duplicate column(s) ['age']")


@pytest.mark.parametrize("size, shown", [("1.5", "1.5"), ('"3"', "'3'"), ("true", "True"), ("0", "at least 1 level"),
                                         ("-2", "at least 1 level"), ("null", "None")])
def test_domain_sizes_must_be_positive_integers(coded, capsys, tmp_path, size, shown):
    folder, data = coded
    text = json.dumps(data.domain.to_dict()).replace('"age": ' + str(data.domain["age"]), f'"age": {size}')
    (tmp_path / "d.json").write_text(text)
    _refused(capsys, _synth(tmp_path, str(folder / "mine.csv"), str(tmp_path / "d.json")), tmp_path,
             f"{tmp_path / 'd.json'}: ", "'age'", shown)


def test_duplicate_keys_in_a_domain_json(coded, capsys, tmp_path):
    folder, data = coded
    text = json.dumps(data.domain.to_dict())[:-1] + ', "age": 3}'
    (tmp_path / "d.json").write_text(text)
    _refused(capsys, _synth(tmp_path, str(folder / "mine.csv"), str(tmp_path / "d.json")), tmp_path,
             f"{tmp_path / 'd.json'}: duplicate key(s) ['age']")
    with pytest.raises(ValueError, match=r"d.json: duplicate key\(s\) \['age'\]"):
        Domain.load(tmp_path / "d.json")


def test_spec_with_domain_is_refused(coded, raw, capsys, tmp_path):
    folder, _ = coded
    argv = ["synth", "--data", str(raw / "raw.csv"), "--spec", str(raw / "spec.json"), "--domain",
            str(folder / "domain.json"), "--out", str(tmp_path / "s.csv"), "--release", str(tmp_path / "r.npz")]
    _refused(capsys, argv, tmp_path, "give --domain (a CSV of codes) or --spec (a CSV of raw values), not both")


def test_decode_errors_and_deeply_nested_json_name_the_file(raw, capsys, tmp_path):
    (tmp_path / "codes.csv").write_text("age,paid\n99,0\n")
    _refused(capsys, ["discretize", "--spec", str(raw / "spec.json"), "--decode", str(tmp_path / "codes.csv"),
                      "--out", str(tmp_path / "o.csv")], tmp_path, f"{tmp_path / 'codes.csv'}: column 'age'")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    _refused(capsys, ["discretize", "--spec", str(tmp_path / "deep.json"), "--decode", str(tmp_path / "codes.csv"),
                      "--out", str(tmp_path / "o.csv")], tmp_path, f"{tmp_path / 'deep.json'}: not a discretization spec")


def test_rows_are_capped_before_any_work(coded, capsys, tmp_path):
    folder, _ = coded
    argv = _synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"))
    _refused(capsys, argv + ["--rows", "1000000000000"], tmp_path,
             "argument --rows: at most 100,000,000 rows, got 1,000,000,000,000")  # was a MemoryError (exit 1)
    _refused(capsys, argv + ["--rows", "50000000"], tmp_path,
             "50,000,000 synthetic rows x 8 columns is more than the 268,435,456 cells allowed", "--rows")


def test_a_crafted_coefficient_file_is_checked_before_the_refit(coded, capsys, tmp_path):
    folder, data = coded
    argv = _synth(tmp_path, str(folder / "mine.csv"), str(folder / "domain.json"))
    assert main(argv) == 0
    coef = {"target": ["age"], "model": "linear", "excluded": [], "features": [], "coef": []}
    (tmp_path / "c.json").write_text(json.dumps(coef))
    (tmp_path / "rows.csv").write_text("age\n1\n")
    _refused(capsys, ["predict", "--release", str(tmp_path / "out" / "r.npz"), "--coef", str(tmp_path / "c.json"),
                      "--data", str(tmp_path / "rows.csv"), "--out", str(tmp_path / "p.csv")], tmp_path,
             f"{tmp_path / 'c.json'}: 'target' has the wrong type (['age'])")  # was a TypeError (exit 1)
    for key, value in (("excluded", 3), ("categorical", True), ("features", None), ("coef", {"a": 1}),
                       ("intercept", "x")):
        (tmp_path / "c.json").write_text(json.dumps({**coef, "target": "age", key: value}))
        _refused(capsys, ["predict", "--release", str(tmp_path / "out" / "r.npz"), "--coef", str(tmp_path / "c.json"),
                          "--data", str(tmp_path / "rows.csv"), "--out", str(tmp_path / "p.csv")], tmp_path,
                 f"{tmp_path / 'c.json'}: {key!r} has the wrong type")

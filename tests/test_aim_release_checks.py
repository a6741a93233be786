"""Hostile and careless release files: every problem is a one-line `ReleaseFormatError` naming the
file, checked before anything large is allocated (and the CLI exits 2 on it)."""

from __future__ import annotations

import io
import json
import math
import os
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from aim import AIM, Release, ReleaseFormatError
from aim.release_checks import MAX_RELEASE_MB
from marginals.limits import TooLargeError
from ddssp.cli import main
from marginals.datasets import demo_dataset
from marginals.privacy import cdp_rho


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("rel") / "good.npz"
    data = demo_dataset(n=500)
    workload = [(("age", "education"), 1.0), (("hours", "income"), 1.0)]
    AIM(1.0, 1e-9, workload=workload, max_iters=5, final_iters=5, insecure_seed=3).run(data).save(path)
    return path


def _arrays(path) -> dict:
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


def _write(path, header: dict, arrays: dict) -> None:
    out = dict(arrays)
    out["header"] = np.array(json.dumps(header))
    np.savez_compressed(path, **out)


def _tamper(good, tmp_path, name="bad.npz", arrays=None, **changes):
    """A copy of the good release with header fields changed (dotted keys reach into dicts)."""
    base = _arrays(good)
    header = json.loads(str(base["header"]))
    for key, value in changes.items():
        target = header
        *parents, last = key.split("__")
        for p in parents:
            target = target[p] if not p.isdigit() else target[int(p)]
        target[int(last) if last.isdigit() else last] = value
    base.update(arrays or {})
    path = tmp_path / name
    _write(path, header, base)
    return path


def _load_error(path) -> str:
    with pytest.raises(ReleaseFormatError) as info:
        Release.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


def test_the_good_file_loads(good):
    assert Release.load(good).total > 0


def test_measurement_shape_is_checked_against_the_domain(good, tmp_path):
    arrays = _arrays(good)
    bad = _tamper(good, tmp_path, arrays={"measurement_0": arrays["measurement_0"].ravel()[:3]})
    message = _load_error(bad)
    assert "array 'measurement_0' has shape (3,), expected" in message and "from the domain" in message
    bad = _tamper(good, tmp_path, "p.npz", arrays={"potential_0": np.zeros((2, 2, 2))})
    assert "array 'potential_0' has shape (2, 2, 2)" in _load_error(bad)


def _zip_with_members(path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_a_small_file_declaring_gigabytes_is_refused_before_allocating(good, tmp_path):
    # (a) the header declares huge cliques: refused from the header alone
    header = json.loads(str(_arrays(good)["header"]))
    header["domain"] = {"a": 5_000_000, "b": 5_000_000, "c": 2}
    header["measurements"] = [{"clique": ["a", "b"], "sigma": 1.0}]
    header["model"]["cliques"] = [["a", "b"]]
    path = tmp_path / "huge.npz"
    _write(path, header, {"measurement_0": np.zeros(1), "potential_0": np.zeros(1)})
    tracemalloc.start()
    start = time.perf_counter()
    message = _load_error(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert f"more than the {MAX_RELEASE_MB:,.0f} MiB allowed" in message
    assert peak < 50 * 2**20 and time.perf_counter() - start < 5

    # (b) an array whose .npy header claims 8 GB (the data itself is a few bytes): its header is
    # checked against the domain before a byte of data is read
    arrays = _arrays(good)
    forged = np.lib.format.magic(1, 0) + _forged_header((10**9,))
    members = {f"{k}.npy": _npy_bytes(v) for k, v in arrays.items()}
    members["measurement_0.npy"] = forged + b"\0" * 64
    path = tmp_path / "bomb.npz"
    _zip_with_members(path, members)
    tracemalloc.start()
    message = _load_error(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "array 'measurement_0' has shape (1000000000,), expected" in message
    assert peak < 50 * 2**20


def _forged_header(shape: tuple[int, ...]) -> bytes:
    text = repr({"descr": "<f8", "fortran_order": False, "shape": shape}).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text = text + b" " * pad + b"\n"
    return len(text).to_bytes(2, "little") + text


def test_domain_sizes_in_the_header_are_capped_and_integers(good, tmp_path):
    assert "more than the 10,000,000 allowed" in _load_error(_tamper(good, tmp_path, domain__age=10**12))
    assert "non-integer size 2.5" in _load_error(_tamper(good, tmp_path, domain__age=2.5))
    assert "non-integer size '3'" in _load_error(_tamper(good, tmp_path, domain__age="3"))


def test_config_epsilon_and_delta_must_match_the_ledger(good, tmp_path):
    message = _load_error(_tamper(good, tmp_path, config__mechanism__epsilon=2.0))
    assert "config (epsilon=2, delta=1e-09) means rho=" in message and "ledger's budget is rho=" in message
    message = _load_error(_tamper(good, tmp_path, config__mechanism__delta=1e-5))
    assert "config delta 1e-05 does not match the ledger's delta 1e-09" in message
    message = _load_error(_tamper(good, tmp_path, ledger__rho=cdp_rho(1.0, 1e-9) * 1.5))
    assert "ledger's budget is rho=" in message


@pytest.mark.parametrize("total", [math.nan, math.inf, -5.0, 0.0, "12"])
def test_model_total_must_be_finite_and_positive(good, tmp_path, total):
    assert "model total must be a finite number > 0" in _load_error(_tamper(good, tmp_path, model__total=total))


def test_sigma_must_be_finite_and_positive(good, tmp_path):
    message = _load_error(_tamper(good, tmp_path, measurements__0__sigma=math.inf))
    assert "sigma must be a finite number > 0, got inf" in message


def test_cliques_must_be_in_the_domain(good, tmp_path):
    message = _load_error(_tamper(good, tmp_path, measurements__0__clique=["age", "nope"]))
    assert "measurement clique: unknown attribute(s) ['nope']" in message


def test_potentials_must_not_hold_nan(good, tmp_path):
    potential = _arrays(good)["potential_0"].copy()
    potential.flat[0] = np.nan
    assert "holds NaN or +inf" in _load_error(_tamper(good, tmp_path, arrays={"potential_0": potential}))


def test_random_bytes_are_not_a_release(tmp_path):
    path = tmp_path / "random.npz"
    path.write_bytes(os.urandom(4096))
    message = _load_error(path)
    assert message == f"{path}: not a release file (not an .npz archive)"
    assert "pickle" not in message  # numpy's hint to load it unsafely is gone
    zipped = tmp_path / "random-zip.npz"
    zipped.write_bytes(b"PK\x03\x04" + os.urandom(4096))
    assert "truncated or corrupt archive" in _load_error(zipped)


def test_object_arrays_are_refused_without_unpickling(good, tmp_path):
    members = {f"{k}.npy": _npy_bytes(v) for k, v in _arrays(good).items()}
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    members["potential_0.npy"] = buf.getvalue()
    path = tmp_path / "pickled.npz"
    _zip_with_members(path, members)
    assert "array 'potential_0' holds Python objects" in _load_error(path)


def test_cli_reports_a_crafted_release_in_one_line_exit_2(good, tmp_path, capsys):
    bad = _tamper(good, tmp_path, config__mechanism__epsilon=5.0)
    for argv in (["inspect", str(bad)], ["fit", "--release", str(bad), "--target", "income", "--json",
                                         str(tmp_path / "coef.json")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and f"{bad}: config (epsilon=5" in err
    assert not (tmp_path / "coef.json").exists()


def test_rounds_and_config_types_are_checked(good, tmp_path, capsys):
    bad = _tamper(good, tmp_path, rounds=[1, 2])
    assert "each round must be a JSON object" in _load_error(bad)
    assert "config workload must be a JSON list" in _load_error(_tamper(good, tmp_path, config__mechanism__workload=3))
    assert main(["inspect", str(bad)]) == 2  # would have been an internal error (exit 1) in the report
    capsys.readouterr()


def test_fit_on_a_release_without_epsilon_in_its_config(good, tmp_path, capsys):
    base = _arrays(good)
    header = json.loads(str(base["header"]))
    header["config"] = {}
    path = tmp_path / "bare.npz"
    _write(path, header, base)
    assert Release.load(path).epsilon is None
    assert main(["fit", "--release", str(path), "--target", "income"]) == 0
    assert "eps=unknown" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_private_flag_must_be_a_boolean(good, tmp_path, value):
    bad = _tamper(good, tmp_path, private=value)
    assert "header field 'private' must be true or false" in _load_error(bad)


def test_version_1_files_are_refused_with_the_reason(good, tmp_path):
    bad = _tamper(good, tmp_path, version=1, seed=0)
    assert "version 1 files stored the seed that undoes their noise" in _load_error(bad)


@pytest.mark.parametrize("field, value", [("rho_used", "0.5"), ("sigma", [1]), ("round", "x"), ("clique", "age"),
                                          ("annealed", "no"), ("iterations", 2.5), ("extra", {"a": 1})])
def test_round_fields_must_have_their_json_types(good, tmp_path, capsys, field, value):
    bad = _tamper(good, tmp_path, **{f"rounds__0__{field}": value})
    assert f"round field {field!r} has the wrong type" in _load_error(bad)
    for argv in (["report", "--release", str(bad), "--no-png", "--out", str(tmp_path / "r.html")], ["inspect", str(bad)]):
        assert main(argv) == 2  # was a TypeError (exit 1) in the report's plots
        assert f"{bad}: release header: round field {field!r}" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("field, value", [("mechanism", ["x"]), ("mechanism", None), ("label", 3),
                                          ("params", {"sigma": [1]})])
def test_ledger_charges_must_hold_text_and_numbers(good, tmp_path, capsys, field, value):
    bad = _tamper(good, tmp_path, **{f"ledger__charges__0__{field}": value})
    assert "label and mechanism must be text" in _load_error(bad)
    assert main(["inspect", str(bad)]) == 2
    capsys.readouterr()


def test_model_info_holds_scalars(good, tmp_path):
    assert "model info must be a JSON object of numbers or text" in _load_error(
        _tamper(good, tmp_path, model__info__iterations={"a": [1]}))


def _wide(good, tmp_path, levels: int):
    """A small, loadable release over two attributes of ``levels`` levels each (measured one at a time)."""
    header = json.loads(str(_arrays(good)["header"]))
    header["domain"] = {"a": levels, "b": levels}
    header["measurements"] = [{"clique": ["a"], "sigma": 1.0}, {"clique": ["b"], "sigma": 1.0}]
    header["model"]["cliques"] = [["a"], ["b"]]
    header["config"]["mechanism"]["workload"], header["rounds"] = [[["a", "b"], 1.0]], []
    path = tmp_path / "wide.npz"
    ones = np.ones(levels)
    _write(path, header, {"measurement_0": ones, "measurement_1": ones, "potential_0": 0 * ones, "potential_1": 0 * ones})
    return path


def test_every_consumer_checks_the_cells_it_allocates(good, tmp_path, capsys):
    path = _wide(good, tmp_path, 100_000)  # loads in a few MB; its pair marginal is 74.5 GiB
    release = Release.load(path)
    with pytest.raises(TooLargeError, match=r"the marginals of 1 clique\(s\) would need 74.5 GiB"):
        release.marginal(("a", "b"))
    assert release.marginal(("a",)).shape == (100_000,)
    for argv, shown in (
        (["fit", "--release", str(path), "--target", "a"], "a DD-SSP fit on this domain would need"),
        (["report", "--release", str(path), "--no-png", "--out", str(tmp_path / "r.html"), "--data",
          str(tmp_path / "ab.csv")], "the report's 1-way and 2-way marginals would need"),
    ):
        (tmp_path / "ab.csv").write_text("a,b\n1,2\n")
        assert main(argv) == 2  # was MemoryError (exit 1), or a 74.5 GiB allocation
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert shown in err and "MiB allowed" in err and "MemoryError" not in err, err
    assert main(["fit", "--release", str(path), "--target", "a"]) == 2
    assert f"{path}: a DD-SSP fit" in capsys.readouterr().err  # the CLI names the file
    assert main(["inspect", str(path)]) == 0  # inspect allocates nothing beyond what load checked
    capsys.readouterr()
    from ddssp import DDSSPLinearRegression

    with pytest.raises(TooLargeError, match="a DD-SSP fit on this domain would need"):
        DDSSPLinearRegression(target="a").fit(release)  # the library checks too, before np.eye(100_000)


def test_synthetic_rows_are_capped(good, tmp_path):
    release = Release.load(good)
    with pytest.raises(TooLargeError, match="1,000,000,000,000 synthetic rows x 8 columns is more than"):
        release.synthetic_data(10**12)
    huge = Release.load(_tamper(good, tmp_path, model__total=1e300))  # a crafted total: the default n
    with pytest.raises(TooLargeError, match="synthetic rows x 8 columns"):
        huge.synthetic_codes()
    assert len(release.synthetic_codes(5, rng=1)) == 5

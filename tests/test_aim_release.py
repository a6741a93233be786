"""The release file: exact save/load round trip, bad files, atomic writes, cross-process determinism."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import marginals.domain
from aim import AIM, Release, ReleaseFormatError
from marginals.datasets import demo_dataset

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def data():
    return demo_dataset(n=2000)


@pytest.fixture(scope="module")
def release(data):
    workload = [(("age", "education"), 1.0), (("hours", "income"), 2.0), (("sector", "region", "income"), 1.0)]
    return AIM(1.0, 1e-9, workload=workload, max_iters=20, final_iters=30, insecure_seed=7).run(data)


def _all_pairs(domain):
    return [(a, b) for i, a in enumerate(domain.attrs) for b in domain.attrs[i + 1 :]]


def test_save_load_round_trip_is_exact(tmp_path, release):
    path = tmp_path / "rel.npz"
    release.save(path)
    loaded = Release.load(path)
    assert loaded.domain == release.domain
    assert len(loaded.measurements) == len(release.measurements)
    for a, b in zip(release.measurements, loaded.measurements):
        assert a.clique == b.clique
        assert a.sigma == b.sigma
        assert a.noisy_counts.dtype == b.noisy_counts.dtype
        assert a.noisy_counts.tobytes() == b.noisy_counts.tobytes()
    assert loaded.model.cliques == release.model.cliques
    assert loaded.model.total == release.model.total
    for c in release.model.cliques:
        assert loaded.model.potentials[c].values.tobytes() == release.model.potentials[c].values.tobytes()
        assert loaded.model.potentials[c].attrs == release.model.potentials[c].attrs
    assert loaded.ledger.to_dict() == release.ledger.to_dict()
    assert loaded.ledger.spent == release.ledger.spent
    assert [(c.label, c.mechanism, c.rho, c.params) for c in loaded.ledger.charges] == [
        (c.label, c.mechanism, c.rho, c.params) for c in release.ledger.charges
    ]
    assert loaded.rounds == release.rounds
    assert loaded.config == release.config
    assert loaded.private is release.private is False  # a seeded (test) run is marked not private
    assert loaded.epsilon == release.epsilon == 1.0
    assert loaded.delta == release.delta == 1e-9


def test_loaded_release_answers_and_samples_identically(tmp_path, release):
    path = tmp_path / "rel.npz"
    release.save(path)
    loaded = Release.load(path)
    cliques = _all_pairs(release.domain) + [("income",), ("sector", "region", "income"), ("region", "age")]
    for a, b in zip(release.marginals(cliques), loaded.marginals(cliques)):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()
    assert release.marginal(("income", "hours")).tobytes() == loaded.marginal(("income", "hours")).tobytes()
    pd.testing.assert_frame_equal(
        release.synthetic_data(rng=np.random.default_rng(99)), loaded.synthetic_data(rng=np.random.default_rng(99))
    )
    pd.testing.assert_frame_equal(release.synthetic_data(n=500, rng=5), loaded.synthetic_data(n=500, rng=5))
    assert not release.synthetic_data(n=500).equals(release.synthetic_data(n=500))  # default: fresh entropy
    assert not release.synthetic_data(n=500, rng=1).equals(release.synthetic_data(n=500, rng=2))


def test_save_twice_gives_identical_bytes(tmp_path, release):
    release.save(tmp_path / "a.npz")
    Release.load(tmp_path / "a.npz").save(tmp_path / "b.npz")
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    assert sorted(a.files) == sorted(b.files)
    for name in a.files:
        assert a[name].tobytes() == b[name].tobytes(), name


def _npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _header(path) -> dict:
    with np.load(path) as npz:
        return json.loads(str(npz["header"]))


def test_bad_files_raise(tmp_path, release):
    good = tmp_path / "good.npz"
    release.save(good)
    header = _header(good)

    no_header = tmp_path / "no_header.npz"
    no_header.write_bytes(_npz_bytes(x=np.arange(3)))
    with pytest.raises(ValueError, match="not a release file"):
        Release.load(no_header)

    other = tmp_path / "other.npz"
    other.write_bytes(_npz_bytes(header=np.array(json.dumps({**header, "format": "something-else"}))))
    with pytest.raises(ValueError, match="not a release file"):
        Release.load(other)

    future = tmp_path / "future.npz"
    future.write_bytes(_npz_bytes(header=np.array(json.dumps({**header, "version": 99}))))
    with pytest.raises(ValueError, match="version 99"):
        Release.load(future)

    text = tmp_path / "text.npz"
    text.write_text("hello, not a numpy file\n")
    with pytest.raises(ReleaseFormatError, match=r"text.npz: not a release file \(not an .npz archive\)"):
        Release.load(text)

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ReleaseFormatError, match="truncated.npz: not a readable release file"):
        Release.load(truncated)

    lost_array = tmp_path / "lost_array.npz"
    lost_array.write_bytes(_npz_bytes(header=np.array(json.dumps(header))))  # header without the arrays
    with pytest.raises(ReleaseFormatError, match="lost_array.npz: not a readable release file \\(missing array 'measurement_0'\\)"):
        Release.load(lost_array)

    with pytest.raises(FileNotFoundError):
        Release.load(tmp_path / "missing.npz")


def test_save_is_atomic_and_overwrites_the_whole_file(tmp_path, release, monkeypatch):
    path = tmp_path / "sub" / "rel.npz"
    path.parent.mkdir()
    path.write_bytes(os.urandom(3_000_000))  # a bigger old file: nothing of it may survive
    release.save(path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["rel.npz"]  # no temporary files left
    assert path.stat().st_size < 3_000_000
    assert Release.load(path).ledger.to_dict() == release.ledger.to_dict()
    first = path.read_bytes()

    # a failure during the final rename leaves the previous file intact and no temporary file
    def fail(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(marginals.domain.os, "replace", fail)
    with pytest.raises(OSError, match="simulated"):
        release.save(path)
    assert path.read_bytes() == first
    assert sorted(p.name for p in path.parent.iterdir()) == ["rel.npz"]


def test_save_creates_missing_folders(tmp_path, release):
    path = tmp_path / "a" / "b" / "rel.npz"
    release.save(path)
    assert Release.load(path).ledger.to_dict() == release.ledger.to_dict()


# --- the same seed gives the same release in another process -------------------------------------

SCRIPT = """
import sys
from aim import AIM
from marginals.datasets import demo_dataset

data = demo_dataset(n=2000)
# a Python set of string tuples: its iteration order depends on PYTHONHASHSEED
workload = {(("age", "education"), 1.0), (("hours", "income"), 1.0), (("sector", "region"), 2.0),
            (("married", "children"), 1.0), (("education", "income"), 1.0)}
AIM(1.0, 1e-9, workload=workload, max_iters=20, final_iters=20, insecure_seed=int(sys.argv[2])).run(data).save(sys.argv[1])
"""


def _run_in_process(path: Path, seed: int, hashseed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), str(seed)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


def _contents(path: Path) -> tuple[dict, dict]:
    with np.load(path) as npz:
        header = json.loads(str(npz["header"]))
        arrays = {name: npz[name].tobytes() for name in npz.files if name != "header"}
    for entry in header["rounds"]:
        assert "seconds" not in entry  # timing of the exact selection would depend on private scores
    header["model"]["info"].pop("seconds", None)
    return header, arrays


@pytest.mark.slow
def test_same_seed_same_release_across_processes(tmp_path):
    paths = {}
    for name, seed, hashseed in [("a", 123, "1"), ("b", 123, "987654"), ("c", 124, "1")]:
        paths[name] = tmp_path / f"{name}.npz"
        _run_in_process(paths[name], seed, hashseed)
    header_a, arrays_a = _contents(paths["a"])
    header_b, arrays_b = _contents(paths["b"])
    assert len(header_a["rounds"]) >= 2
    assert header_a == header_b  # measurements' cliques and sigmas, model, ledger, rounds, config
    assert arrays_a.keys() == arrays_b.keys()
    for name in arrays_a:
        assert arrays_a[name] == arrays_b[name], name
    header_c, arrays_c = _contents(paths["c"])
    assert "seed" not in header_c and header_c["private"] is False
    assert arrays_c["measurement_0"] != arrays_a["measurement_0"]


def test_release_without_an_attribute(release, data):
    view = release.without(["education"])
    assert "education" not in view.domain.attrs and len(view.domain) == len(release.domain) - 1
    pair = ("age", "hours")
    np.testing.assert_array_equal(view.marginal(pair), release.marginal(pair))
    with pytest.raises(ValueError, match="unknown attribute"):
        view.marginals([("age", "education")])
    rows = view.synthetic_data(rng=3)
    full = release.synthetic_data(rng=3)
    pd.testing.assert_frame_equal(rows, full.drop(columns=["education"]))
    with pytest.raises(ValueError, match="unknown attribute"):
        release.without(["nope"])

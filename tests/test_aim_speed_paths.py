"""The fast size filter and batched scoring (split queries) change no seeded AIM run: same rounds, cliques, scales.

Each run is repeated with the reference paths (the full re-triangulation filter of
`test_aim_size_filter.reference_filter`, and per-query marginals only) and compared round by round.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import aim.mechanism as mech
import pgm.queries
from aim import AIM, all_k_way, candidates, normalize_workload
from marginals.datasets import demo_dataset
from benchmarks.data import data_dir, load_bundled

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_aim_size_filter import reference_filter  # noqa: E402


def _run(data, reference: bool, **kwargs):
    mp = pytest.MonkeyPatch()
    if reference:
        mp.setattr(mech.AIM, "_filter", staticmethod(reference_filter))
        mp.setattr(pgm.queries, "split_marginals", lambda *args, **kw: {})
    try:
        return AIM(**kwargs).run(data)
    finally:
        mp.undo()


def _trace(release):
    return [(tuple(r["clique"]), r["sigma"], r["annealed"], r["candidates"]) for r in release.rounds]


def _assert_same(new, old):
    assert _trace(new) == _trace(old)
    assert [m.clique for m in new.measurements] == [m.clique for m in old.measurements]
    for a, b in zip(new.measurements, old.measurements):
        np.testing.assert_array_equal(a.noisy_counts, b.noisy_counts)


@pytest.mark.parametrize("seed", [0, 1])
def test_seeded_run_unchanged_on_pairs_and_triples(seed):
    data = demo_dataset(n=4000, seed=3)
    dom = data.domain
    workload = all_k_way(dom, 2) + [(c, 1.0) for c in itertools.combinations(dom.attrs, 3)][:20]
    settings = dict(epsilon=3.0, delta=1e-9, workload=workload, insecure_seed=seed, max_model_size=0.01, max_iters=20, final_iters=50)
    new, old = _run(data, False, **settings), _run(data, True, **settings)
    assert len(new.rounds) > 10
    total = len(candidates(dom, normalize_workload(dom, workload)))
    assert any(r["candidates"] < total / 2 for r in new.rounds)  # the size limit binds
    _assert_same(new, old)


@pytest.mark.slow
@pytest.mark.skipif(data_dir() is None, reason="the development data folder ../shared/data is absent")
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_seeded_run_unchanged_on_adult(epsilon):
    data = load_bundled("adult")
    settings = dict(epsilon=epsilon, delta=1e-9, insecure_seed=11, max_model_size=20.0)
    _assert_same(_run(data, False, **settings), _run(data, True, **settings))


@pytest.mark.parametrize("chunk", [1, 7, 50, 1 << 20])
def test_chunked_l1_distances_equal_the_per_candidate_sums(chunk):
    rng = np.random.default_rng(chunk)
    truths = [rng.integers(0, 100, rng.integers(1, 20, 2)) for _ in range(30)]  # counts, as AIM's answers
    estimates = [rng.random(t.shape) for t in truths]
    sizes = np.array([t.size for t in truths])
    want = [np.abs(t - e).sum() for t, e in zip(truths, estimates)]
    np.testing.assert_allclose(mech._l1_distances(truths, estimates, sizes, chunk), want, rtol=1e-13)

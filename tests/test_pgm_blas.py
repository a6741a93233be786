"""The engine owns its BLAS threads: one BLAS thread inside its entry points, the caller's setting after."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from marginals.domain import Domain
from marginals.measurement import Measurement
from pgm.estimation import estimate
from pgm.kernels.blas import blas_single_threaded, one_blas_thread


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture()
def two_blas_threads():
    if not _blas_threads():
        pytest.skip("no BLAS library reported by threadpoolctl")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def test_one_blas_thread_limits_and_restores(two_blas_threads):
    assert set(_blas_threads()) == {2}
    with one_blas_thread():
        assert set(_blas_threads()) == {1}
        with one_blas_thread():  # nested: still one, and the inner exit does not restore
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
    assert set(_blas_threads()) == {2}


def test_restored_after_an_exception(two_blas_threads):
    @blas_single_threaded
    def fails():
        assert set(_blas_threads()) == {1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fails()
    assert set(_blas_threads()) == {2}
    with one_blas_thread():  # the depth counter was unwound: a new entry limits again
        assert set(_blas_threads()) == {1}


def test_estimate_runs_with_one_blas_thread(two_blas_threads):
    domain = Domain(("a", "b"), (3, 4))
    rng = np.random.default_rng(0)
    m = Measurement(("a", "b"), rng.uniform(0, 10, (3, 4)), 1.0)
    seen = []
    estimate(domain, [m], iters=3, callback=lambda it, loss: seen.append(tuple(_blas_threads())))
    assert seen and all(set(s) == {1} for s in seen)
    assert set(_blas_threads()) == {2}


def test_model_queries_and_sampling_run_with_one_blas_thread(two_blas_threads, monkeypatch):
    import pgm.model
    import pgm.sampling

    domain = Domain(("a", "b"), (3, 4))
    m = Measurement(("a", "b"), np.random.default_rng(1).uniform(0, 10, (3, 4)), 1.0)
    model = estimate(domain, [m], iters=3)
    seen = []
    real = pgm.model.MarginalOracle.marginals
    monkeypatch.setattr(pgm.model.MarginalOracle, "marginals",
                        lambda self, subsets: seen.append(tuple(_blas_threads())) or real(self, subsets))
    model.marginals([("a",), ("b",)])
    real_rows = pgm.sampling.sample_rows
    monkeypatch.setattr(pgm.sampling, "sample_rows", lambda *a: seen.append(tuple(_blas_threads())) or real_rows(*a))
    model.synthetic_data(10, rng=0)
    assert len(seen) >= 2 and all(set(s) == {1} for s in seen)  # sampling queries the model too
    assert set(_blas_threads()) == {2}

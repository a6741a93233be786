"""The Lipschitz constant behind mirror descent's first step: a measurement is read off its
smallest containing clique, and the constant is the largest eigenvalue of the loss's Hessian,
built here from explicit marginalisation matrices (no use of the |C| / |C_i| formula)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pgm.estimation
import pgm.loss
from marginals.domain import Domain
from marginals.measurement import Measurement
from pgm import Model, estimate


def marginalisation_matrix(domain: Domain, clique, sub) -> np.ndarray:
    """The 0/1 matrix A with (A vec(table over clique)) = vec(table over sub), cell by cell."""
    rows = list(itertools.product(*(range(domain[a]) for a in sub)))
    cols = list(itertools.product(*(range(domain[a]) for a in clique)))
    index = {cell: i for i, cell in enumerate(rows)}
    A = np.zeros((len(rows), len(cols)))
    for j, cell in enumerate(cols):
        value = dict(zip(clique, cell))
        A[index[tuple(value[a] for a in sub)], j] = 1.0
    return A


def hessian_top_eigenvalue(domain: Domain, cliques, measurements, homes) -> float:
    """Largest eigenvalue of sum_i w_i A_i^T A_i over the stacked clique tables (w_i = 1 / sigma_i^2)."""
    sizes = [int(np.prod([domain[a] for a in c])) for c in cliques]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    H = np.zeros((offsets[-1], offsets[-1]))
    for m, home in zip(measurements, homes):
        A = marginalisation_matrix(domain, cliques[home], m.clique)
        block = slice(offsets[home], offsets[home + 1])
        H[block, block] += A.T @ A / m.sigma**2
    return float(np.linalg.eigvalsh(H).max())


def brute_force_smallest_home(domain: Domain, cliques, sub) -> int:
    """The clique with the fewest cells holding ``sub``; among equals, the one that sorts first by
    its attributes' positions in the domain (so the list order never matters)."""
    holding = [i for i, c in enumerate(cliques) if set(sub) <= set(c)]
    fewest = min(int(np.prod([domain[a] for a in cliques[i]])) for i in holding)
    tied = [i for i in holding if int(np.prod([domain[a] for a in cliques[i]])) == fewest]
    return min(tied, key=lambda i: sorted(domain.attrs.index(a) for a in cliques[i]))


def measurements_on(domain: Domain, cliques_sigmas, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [
        Measurement(c, rng.uniform(5, 50, size=tuple(domain[a] for a in c)), sigma) for c, sigma in cliques_sigmas
    ]


def test_the_issue_example_is_four_not_five():
    # a is in both cliques: the first one (a, b) has 8 cells, (a, c) only 6. Read off (a, b),
    # the 1-way measurement adds |b| = 4 to that clique's 1 (5.0); off (a, c) it adds 3 (4.0).
    dom = Domain(("a", "b", "c"), (2, 4, 3))
    meas = measurements_on(dom, [(("a", "b"), 1.0), (("a", "c"), 1.0), (("a",), 1.0)])
    model = estimate(dom, meas, iters=0)
    assert list(model.cliques) == [("a", "b"), ("a", "c")]
    homes = [0, 1, 1]
    assert model.info["lipschitz"] == pytest.approx(hessian_top_eigenvalue(dom, model.cliques, meas, homes), rel=1e-12)
    assert model.info["lipschitz"] == pytest.approx(4.0, rel=1e-12)
    assert hessian_top_eigenvalue(dom, model.cliques, meas, [0, 1, 0]) == pytest.approx(5.0, rel=1e-12)
    assert model.stepsize == pytest.approx(2.0 / (4.0 * model.total), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_lipschitz_is_the_hessian_top_eigenvalue_in_any_measurement_order(seed):
    rng = np.random.default_rng(seed)
    dom = Domain(tuple("abcde"), tuple(int(k) for k in rng.integers(2, 5, size=5)))
    full = [("a", "b", "c"), ("c", "d"), ("a", "e"), ("b", "d")]
    subs = [("a",), ("c",), ("d",), ("b",), ("a", "b"), ("e",)]
    spec = [(c, float(rng.uniform(0.5, 3.0))) for c in full + subs]
    meas = measurements_on(dom, spec, seed)
    expected = None
    for trial in range(5):
        order = rng.permutation(len(meas))
        shuffled = [meas[i] for i in order]
        model = estimate(dom, shuffled, iters=0)
        cliques = list(model.cliques)
        homes = [brute_force_smallest_home(dom, cliques, m.clique) for m in shuffled]
        top = hessian_top_eigenvalue(dom, cliques, shuffled, homes)
        assert model.info["lipschitz"] == pytest.approx(top, rel=1e-10)
        expected = top if expected is None else expected
        assert top == pytest.approx(expected, rel=1e-12)  # the order of the measurements does not matter


def test_where_a_measurement_is_read_changes_the_step_not_the_model():
    # Reading a 1-way measurement off another clique moves its gradient to another potential,
    # which adds the same function of a to the log-density: with a fixed step, the same fit.
    dom = Domain(("a", "b", "c"), (2, 4, 3))
    truth = Model(dom, [("a", "b"), ("a", "c")], [np.random.default_rng(1).normal(size=s) for s in [(2, 4), (2, 3)]], 500.0)
    rng = np.random.default_rng(2)
    meas = [Measurement(c, truth.project(c).values + rng.normal(0, 2.0, size=truth.project(c).values.shape), 2.0)
            for c in [("a", "b"), ("a", "c"), ("a",)]]
    step = 0.5 * 2.0 / (4.0 / 4.0 * truth.total)
    smallest = estimate(dom, meas, iters=60, stepsize=step)
    mp = pytest.MonkeyPatch()
    mp.setattr(pgm.loss, "smallest_containing",
               lambda domain, cliques, attrs: next(i for i, c in enumerate(cliques) if set(attrs) <= set(c)))
    try:
        first = estimate(dom, meas, iters=60, stepsize=step)
    finally:
        mp.undo()
    assert first.info["lipschitz"] > smallest.info["lipschitz"]
    for c in [("a", "b"), ("a", "c"), ("b", "c")]:
        np.testing.assert_allclose(smallest.project(c).values, first.project(c).values, rtol=1e-9, atol=1e-9)

"""The float32 benchmark's plain propagation is the reference algorithm: in float64 it gives
`pgm.reference.belief_propagation`'s node counts and clique marginals, and in float32 it stays
within float32's precision of them (a relative error of 1e-5 of the total), with float32 or
float64 accumulators."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.float32_bp import accumulation_errors, clique_marginals, compare, plain_belief_propagation
from marginals.domain import Domain
from pgm.junction_tree import build_junction_tree
from pgm.reference import belief_propagation

TOTAL = 48_842.0
#: float32 rounds at 6e-8 relative; a few dozen operations per cell stay well inside this.
FLOAT32_RELATIVE = 1e-5


@pytest.fixture(scope="module")
def small_model():
    domain = Domain(("a", "b", "c", "d", "e", "f"), (3, 4, 2, 5, 3, 6))
    cliques = [("a", "b"), ("b", "c", "d"), ("c", "e"), ("d", "f"), ("a",), ("e", "f")]
    rng = np.random.default_rng(7)
    potentials = [rng.normal(scale=3.0, size=domain.project(c).shape) for c in cliques]
    potentials[0][1, 2] = -np.inf  # a structural zero
    tree = build_junction_tree(domain, cliques)
    return tree, cliques, potentials


def test_float64_matches_the_reference(small_model):
    tree, cliques, potentials = small_model
    reference = belief_propagation(tree, cliques, potentials, TOTAL)
    plain = plain_belief_propagation(tree, cliques, potentials, TOTAL, np.float64)
    assert len(plain) == len(tree.nodes) > 1
    for mine, theirs in zip(plain, reference):
        assert mine.dtype == np.float64
        np.testing.assert_allclose(mine, theirs.values, rtol=1e-10, atol=1e-9 * TOTAL)
    assert clique_marginals(tree, plain, cliques)[0][1, 2] == 0.0


@pytest.mark.parametrize("accumulator", [None, np.float64])
def test_float32_stays_within_its_precision(small_model, accumulator):
    tree, cliques, potentials = small_model
    reference = belief_propagation(tree, cliques, potentials, TOTAL)
    plain = plain_belief_propagation(tree, cliques, potentials, TOTAL, np.float32, accumulator)
    for mine, theirs in zip(plain, reference):
        assert mine.dtype == np.float32
        assert np.max(np.abs(mine - theirs.values)) <= FLOAT32_RELATIVE * TOTAL
    margins64 = clique_marginals(tree, [b.values for b in reference], cliques)
    margins32 = clique_marginals(tree, plain, cliques, accumulator)
    assert all(m.dtype == np.float32 for m in margins32)
    errors = compare(margins32, margins64, [1.0] * len(cliques))
    assert 0 < errors["max_abs"] <= FLOAT32_RELATIVE * TOTAL  # not zero: the float32 path really ran in float32


def test_accumulation_errors_are_measured():
    rows = accumulation_errors(cells=1 << 12)
    assert len(rows) == 6 and all(0 <= r["relative_error"] < 1e-3 for r in rows)

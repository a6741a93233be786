"""`pgm.factor`: arithmetic by attribute name, reductions, projections and the -inf guards."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp as scipy_lse

from marginals.domain import Domain
from pgm.factor import Factor, logsumexp

AB = Domain(("a", "b"), (2, 3))
CB = Domain(("c", "b"), (4, 3))


@pytest.fixture()
def fg():
    rng = np.random.default_rng(0)
    f = Factor(AB, rng.normal(size=(2, 3)))
    g = Factor(CB, rng.normal(size=(4, 3)) + 3.0)  # shares b, but in second position
    return f, g


def explicit(op, f, g):
    """op(f[a, b], g[c, b]) on the merged domain (a, b, c), computed cell by cell."""
    out = np.empty((2, 3, 4))
    for a in range(2):
        for b in range(3):
            for c in range(4):
                out[a, b, c] = op(f.values[a, b], g.values[c, b])
    return out


@pytest.mark.parametrize(
    "op",
    [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y, lambda x, y: x / y],
    ids=["add", "mul", "sub", "div"],
)
def test_binary_ops_broadcast_by_name(fg, op):
    f, g = fg
    h = op(f, g)
    assert h.attrs == ("a", "b", "c")  # left operand's attributes first, then the new ones
    assert h.domain.shape == (2, 3, 4)
    np.testing.assert_allclose(h.values, explicit(op, f, g), rtol=1e-15)


def test_binary_op_order_of_operands_only_changes_axis_order(fg):
    f, g = fg
    left, right = f * g, g * f
    assert right.attrs == ("c", "b", "a")
    np.testing.assert_allclose(right.transpose(left.attrs).values, left.values, rtol=1e-15)


def test_scalar_ops(fg):
    f, _ = fg
    np.testing.assert_allclose((f + 2).values, f.values + 2)
    np.testing.assert_allclose((2 + f).values, f.values + 2)
    np.testing.assert_allclose((3 * f).values, 3 * f.values)
    np.testing.assert_allclose((f - 1).values, f.values - 1)
    np.testing.assert_allclose((f / 4).values, f.values / 4)
    np.testing.assert_allclose((-f).values, -f.values)
    assert (f + 2).domain == f.domain


def test_mismatched_sizes_refuse_to_merge():
    with pytest.raises(ValueError, match="levels"):
        Factor(Domain(("a",), (2,)), np.ones(2)) + Factor(Domain(("a",), (3,)), np.ones(3))


def test_sum_and_logsumexp_over_attributes():
    rng = np.random.default_rng(1)
    dom = Domain(("a", "b", "c"), (2, 3, 4))
    f = Factor(dom, rng.normal(size=dom.shape))
    s = f.sum(["a", "c"])
    assert s.attrs == ("b",)
    np.testing.assert_allclose(s.values, f.values.sum(axis=(0, 2)), rtol=1e-14)
    lse = f.logsumexp(["b"])
    assert lse.attrs == ("a", "c")
    np.testing.assert_allclose(lse.values, scipy_lse(f.values, axis=1), rtol=1e-13)
    assert float(f.sum().values) == pytest.approx(f.values.sum(), rel=1e-14)
    assert float(f.logsumexp().values) == pytest.approx(scipy_lse(f.values), rel=1e-14)
    assert f.sum([]).attrs == f.attrs  # summing nothing keeps everything
    with pytest.raises(ValueError, match="unknown"):
        f.sum(["z"])


def test_logsumexp_is_stable_for_large_values():
    dom = Domain(("a",), (2,))
    f = Factor(dom, np.array([1000.0, 1000.0]))
    assert float(f.logsumexp().values) == pytest.approx(1000 + np.log(2), rel=1e-15)
    g = Factor(dom, np.array([-1000.0, -1000.0]))
    assert float(g.logsumexp().values) == pytest.approx(-1000 + np.log(2), rel=1e-15)


def test_project_and_transpose_follow_the_requested_order():
    rng = np.random.default_rng(2)
    dom = Domain(("a", "b", "c"), (2, 3, 4))
    f = Factor(dom, rng.random(dom.shape))
    p = f.project(("c", "a"))
    assert p.attrs == ("c", "a") and p.values.shape == (4, 2)
    np.testing.assert_allclose(p.values, f.values.sum(axis=1).T, rtol=1e-14)
    t = f.transpose(("b", "c", "a"))
    assert t.values.shape == (3, 4, 2)
    assert t.values[2, 3, 1] == f.values[1, 2, 3]
    with pytest.raises(ValueError):
        f.transpose(("a", "b"))
    with pytest.raises(ValueError):
        f.project(("a", "zz"))


def test_expand_broadcasts_onto_a_larger_domain():
    f = Factor(Domain(("b", "a"), (3, 2)), np.arange(6.0).reshape(3, 2))
    big = Domain(("a", "c", "b"), (2, 5, 3))
    e = f.expand(big)
    assert e.shape == (2, 5, 3)
    assert e[1, 4, 2] == f.values[2, 1]
    with pytest.raises(ValueError, match="not in the target"):
        f.expand(Domain(("a",), (2,)))


def test_log_space_subtraction_of_minus_inf_is_minus_inf_not_nan():
    dom = Domain(("a",), (3,))
    f = Factor(dom, np.array([-np.inf, -np.inf, 1.0]))
    g = Factor(dom, np.array([-np.inf, 2.0, -np.inf]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either
        d = f - g
    assert not np.isnan(d.values).any()
    assert d.values[0] == -np.inf and d.values[1] == -np.inf
    assert d.values[2] == 1.0  # a -inf subtrahend counts as 0


def test_division_by_zero_gives_zero():
    dom = Domain(("a",), (3,))
    f = Factor(dom, np.array([1.0, 0.0, 6.0]))
    g = Factor(dom, np.array([0.0, 0.0, 3.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = f / g
    np.testing.assert_array_equal(q.values, [0.0, 0.0, 2.0])


def test_logsumexp_of_an_all_minus_inf_slice_is_minus_inf():
    values = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = logsumexp(values, (1,))
        whole = logsumexp(np.full((2, 2), -np.inf), None)
        via_factor = Factor(Domain(("a", "b"), (2, 2)), values).logsumexp(["b"]).values
    assert out[0] == -np.inf and out[1] == 0.0
    assert whole == -np.inf
    np.testing.assert_array_equal(via_factor, out)


def test_log_and_normalize():
    dom = Domain(("a",), (3,))
    f = Factor(dom, np.array([0.0, 1.0, 3.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lf = f.log()
    assert lf.values[0] == -np.inf
    np.testing.assert_allclose(f.normalize(8.0).values, [0.0, 2.0, 6.0])
    ln = lf.normalize(8.0, log=True)
    np.testing.assert_allclose(np.exp(ln.values), [0.0, 2.0, 6.0], rtol=1e-14)


def test_copy_is_independent_and_reshape_on_construction():
    dom = Domain(("a", "b"), (2, 3))
    f = Factor(dom, np.arange(6.0))  # flat input is reshaped to the domain shape
    assert f.values.shape == (2, 3)
    c = f.copy()
    c.values[0, 0] = 99.0
    assert f.values[0, 0] == 0.0
    with pytest.raises(ValueError):
        Factor(dom, np.arange(5.0))

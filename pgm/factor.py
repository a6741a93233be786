"""`Factor`: a dense table over an ordered tuple of attributes, with arithmetic by attribute name.

Binary operations broadcast by name: the result lives on the merged domain (left operand's
attributes first). Reductions (`sum`, `logsumexp`) remove named attributes; `project` keeps
named attributes in the order given. Log-space helpers guard the -inf cases that structural
zeros produce (``-inf - -inf`` and ``log(0)``), so they never yield NaN.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from marginals.domain import Domain


class Factor:
    """A table ``values`` whose axes follow ``domain.attrs``.

    Example:
        >>> f = Factor(Domain(("a", "b"), (2, 3)), np.arange(6.0).reshape(2, 3))
        >>> g = Factor(Domain(("b",), (3,)), np.ones(3))
        >>> (f + g).project(("b",)).values
        array([5., 7., 9.])
    """

    __slots__ = ("domain", "values")

    def __init__(self, domain: Domain, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != domain.shape:
            values = values.reshape(domain.shape)
        self.domain = domain
        self.values = values

    @classmethod
    def zeros(cls, domain: Domain) -> "Factor":
        return cls(domain, np.zeros(domain.shape))

    @classmethod
    def ones(cls, domain: Domain) -> "Factor":
        return cls(domain, np.ones(domain.shape))

    @property
    def attrs(self) -> tuple[str, ...]:
        return self.domain.attrs

    def transpose(self, attrs: Sequence[str]) -> "Factor":
        """The same table with axes reordered to ``attrs`` (a permutation of this factor's attributes)."""
        attrs = tuple(attrs)
        if set(attrs) != set(self.attrs) or len(attrs) != len(self.attrs):
            raise ValueError(f"transpose: {attrs} is not a permutation of {self.attrs}")
        perm = [self.attrs.index(a) for a in attrs]
        return Factor(self.domain.project(attrs), np.transpose(self.values, perm))

    def expand(self, domain: Domain) -> np.ndarray:
        """This table broadcast (as a view) onto a larger ``domain`` that contains its attributes."""
        missing = [a for a in self.attrs if a not in domain]
        if missing:
            raise ValueError(f"expand: {missing} are not in the target domain {domain.attrs}")
        present = [a for a in domain.attrs if a in self.attrs]
        values = np.transpose(self.values, [self.attrs.index(a) for a in present])
        shape = [domain[a] if a in self.attrs else 1 for a in domain.attrs]
        return np.broadcast_to(values.reshape(shape), domain.shape)

    def _binary(self, other, op) -> "Factor":
        if isinstance(other, Factor):
            merged = self.domain.merge(other.domain)
            return Factor(merged, op(self.expand(merged), other.expand(merged)))
        return Factor(self.domain, op(self.values, other))

    def __add__(self, other) -> "Factor":
        return self._binary(other, np.add)

    def __radd__(self, other) -> "Factor":
        return self + other

    def __mul__(self, other) -> "Factor":
        return self._binary(other, np.multiply)

    def __rmul__(self, other) -> "Factor":
        return self * other

    def __sub__(self, other) -> "Factor":
        """Difference; ``-inf - -inf`` gives -inf (a structural zero stays zero), never NaN."""
        return self._binary(other, _log_safe_subtract)

    def __truediv__(self, other) -> "Factor":
        """Quotient; entries whose divisor is 0 give 0 (conditionals on impossible states)."""
        return self._binary(other, _safe_divide)

    def __neg__(self) -> "Factor":
        return Factor(self.domain, -self.values)

    def _axes(self, attrs: Sequence[str]) -> tuple[int, ...]:
        return tuple(self.attrs.index(a) for a in self.domain.check(attrs))

    def sum(self, attrs: Sequence[str] | None = None) -> "Factor":
        """Sum out ``attrs`` (all attributes when None)."""
        attrs = self.attrs if attrs is None else tuple(attrs)
        return Factor(self.domain.marginalize(attrs), self.values.sum(axis=self._axes(attrs)))

    def logsumexp(self, attrs: Sequence[str] | None = None) -> "Factor":
        """log(sum(exp(.))) over ``attrs``, stable for large values and all -inf slices."""
        attrs = self.attrs if attrs is None else tuple(attrs)
        return Factor(self.domain.marginalize(attrs), logsumexp(self.values, self._axes(attrs)))

    def project(self, attrs: Sequence[str]) -> "Factor":
        """Sum out every other attribute and order the axes as ``attrs``."""
        attrs = self.domain.check(attrs)
        return self.sum([a for a in self.attrs if a not in attrs]).transpose(attrs)

    def exp(self) -> "Factor":
        return Factor(self.domain, np.exp(self.values))

    def log(self) -> "Factor":
        """Natural log; zeros map to -inf without a warning."""
        with np.errstate(divide="ignore"):
            return Factor(self.domain, np.log(self.values))

    def normalize(self, total: float = 1.0, log: bool = False) -> "Factor":
        """Scale so the table sums to ``total`` (``log=True``: a log-table whose exp sums to ``total``)."""
        if log:
            return Factor(self.domain, self.values + np.log(total) - logsumexp(self.values, None))
        return Factor(self.domain, self.values * (total / self.values.sum()))

    def copy(self) -> "Factor":
        return Factor(self.domain, self.values.copy())

    def __repr__(self) -> str:
        return f"Factor({self.domain})"


def logsumexp(values: np.ndarray, axes: Sequence[int] | None) -> np.ndarray:
    """Stable log-sum-exp over ``axes`` (None: all); a slice of all -inf gives -inf."""
    if axes is not None and len(axes) == 0:
        return np.array(values, dtype=np.float64, copy=True)
    axes = None if axes is None else tuple(axes)
    peak = np.max(values, axis=axes, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(values - peak), axis=axes, keepdims=True)) + peak
    return out.reshape(()) if axes is None else np.squeeze(out, axis=axes)


def _log_safe_subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    b = np.where(np.isneginf(b), 0.0, b)
    return a - b


def _safe_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(a, b)
    return np.where(b == 0, 0.0, out)

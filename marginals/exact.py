"""Exact samplers on integer arithmetic: Bernoulli(exp(-x)), discrete Laplace, discrete Gaussian
and the exponential mechanism, vectorized over numpy arrays.

Why exact. Floating-point noise can leak: the set of floats reachable by ``count + noise``
depends on ``count`` (Mironov 2012 for Laplace; the same class of attack applies to Gaussian
noise). These samplers use only uniform random integers (`RandomSource.below`) and exact integer
comparisons, so the distribution they sample is exactly the one the privacy proof is about.

- `bernoulli_exp`: Bernoulli(exp(-(k + num/den))) with Canonne, Kamath and Steinke (2020,
  Algorithm 1) for the fractional part -- draw Bernoulli(gamma/K) for K = 1, 2, ... until one
  fails; the stopping K is odd with probability exp(-gamma) -- and k further Bernoulli(exp(-1))
  for the integer part. Bernoulli(gamma/K) is Bernoulli(num/den) AND Bernoulli(1/K), so every
  uniform integer stays below ``den`` (no overflow).
- `discrete_laplace`: CKS Algorithm 2 with integer scale t.
- `discrete_gaussian`: CKS Algorithm 3 for a rational variance sigma^2 = p/q: a discrete Laplace
  proposal of scale t = floor(sigma) + 1 accepted with probability
  exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|y| t q - p)^2 / (2 p q t^2)), an exact rational.
  An integer-valued query of L2 sensitivity Delta then satisfies Delta^2/(2 sigma^2)-zCDP
  (CKS Theorem 14, also for independent coordinates). `noise_variance` rounds a requested sigma
  *up* to such a rational (relative change below 2^-20); the accountant is charged for the
  variance actually used. Numbers that would overflow int64 (huge sigma, far tails) take an exact
  Python-integer path (`discrete_gaussian_scalar`, also the test oracle).
- `exponential_choice`: the exponential mechanism by exact rejection sampling. With log-weights
  -x_i (x_i >= 0, the best candidate at 0), propose i uniformly and accept with probability
  exp(-x_i); the accepted index has probability exactly exp(-x_i) / sum_j exp(-x_j) -- no
  underflow (every candidate keeps positive probability), no 2^-53 quantisation of a float CDF.
  Proposals are drawn in batches of 3n and the first acceptance in draw order is returned, which
  is the sequential algorithm. **Timing:** the running time must not tell the scores apart (a
  dominating candidate used to take ~30x longer than equal scores: fewer acceptances, longer
  Bernoulli loops). So every proposal of a batch runs the same fixed work whatever its weight
  (`_bernoulli_exp_fixed_work`: 5 steps of Algorithm 1 for the fraction and 8 Bernoulli(exp(-1))
  trials of the integer part, drawn and combined for every element); only runs that the fixed
  steps leave unfinished (probability <= 1/5! per run, or e^-8 for integer parts above 8) take
  the variable-length completion, and a batch fails to accept with probability <= e^-3. Drawn
  words differ by < 10% and vectorized passes by < 1.5x across score profiles
  (`tests/test_marginals_exact.py`); the time ratio is measured in the issue's closing note. Each x_i is rounded to the nearest multiple of 2^-40 to make it
  an exact rational; that moves every log-probability by at most 2^-40, so the caller runs at
  epsilon - 2^-39 (`EM_ROUNDING`) and the total loss stays <= epsilon. (Float error in computing
  the scores themselves is of order 1e-16 relative and is not modelled.)
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .randomness import RandomSource

_INT64_SAFE = 2**62  # bound for every value that enters int64 arithmetic here
_EM_BITS = 40
#: Privacy slack of `exponential_choice`'s 2^-40 rounding of log-weights (see the module docstring).
EM_ROUNDING = 2.0 ** (1 - _EM_BITS)
# Fixed work per proposal of `exponential_choice` (its running time must not reveal the scores).
_FIXED_STEPS = 5
_FIXED_ROUNDS = 8


def _bernoulli_exp_fraction(source: RandomSource, num: np.ndarray, den: np.ndarray, start: int = 1) -> np.ndarray:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (int64 arrays), CKS Algorithm 1.

    ``start`` > 1 continues runs whose first ``start - 1`` Bernoulli(gamma/K) draws all succeeded
    (`_cks_fixed` leaves such runs unfinished)."""
    k = np.full(num.shape, start, dtype=np.int64)
    active = np.flatnonzero(num > 0) if start == 1 else np.arange(num.size)  # gamma = 0: K stops at 1
    level = start  # every active element has k == level
    den_max = int(den.max(initial=1))
    while active.size:
        if den_max * level <= _INT64_SAFE:  # one uniform below den * k decides Bernoulli(num / (den k))
            a = source.below(den[active] * level) < num[active]
        else:
            a = (source.below(den[active]) < num[active]) & (source.below(level) == 0)
        active = active[a]
        level += 1
        k[active] = level
    return k % 2 == 1


def bernoulli_exp(source: RandomSource, whole: np.ndarray, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(-(whole + num/den))) elementwise; whole >= 0, 0 <= num < den <= 2^62 (int64)."""
    whole = np.asarray(whole, dtype=np.int64)
    num = np.asarray(num, dtype=np.int64)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    result = _bernoulli_exp_fraction(source, num.ravel(), den.ravel())
    remaining = whole.ravel().copy()
    active = np.flatnonzero(result & (remaining > 0))
    while active.size:  # `remaining` more Bernoulli(exp(-1)), stopping at the first failure
        ones = np.ones(active.size, dtype=np.int64)
        b = _bernoulli_exp_fraction(source, ones, ones)
        result[active[~b]] = False
        remaining[active] -= 1
        active = active[b & (remaining[active] > 0)]
    return result.reshape(num.shape)


def _geometric_exp1(source: RandomSource, count: int, block: int = 4) -> np.ndarray:
    """Number of successes before the first failure of Bernoulli(exp(-1)) trials, ``count`` times.

    Trials are drawn ``block`` at a time per element and the leading successes counted; draws
    after an element's first failure are discarded, so the law is that of sequential trials."""
    v = np.zeros(count, dtype=np.int64)
    active = np.arange(count)
    while active.size:
        ones = np.ones(active.size * block, dtype=np.int64)
        trials = _bernoulli_exp_fraction(source, ones, ones).reshape(active.size, block)
        failed = ~trials.all(axis=1)
        v[active] += np.where(failed, np.argmin(trials, axis=1), block)
        active = active[~failed]
    return v


def _accepted_into(out: np.ndarray, filled: int, values: np.ndarray) -> int:
    """Copy accepted i.i.d. draws into ``out`` after ``filled``; returns the new fill level.

    Proposals are drawn in surplus and accepted independently, so the accepted ones, taken in
    draw order, are i.i.d. from the target: the surplus only saves passes through the loop."""
    take = values[: out.size - filled]
    out[filled : filled + take.size] = take
    return filled + take.size


def discrete_laplace(source: RandomSource, t: int, size: int) -> np.ndarray:
    """``size`` draws with P(y) proportional to exp(-|y| / t), integer t >= 1 (CKS Algorithm 2)."""
    out = np.empty(size, dtype=np.int64)
    filled = 0
    t_arr = np.int64(t)
    while filled < size:
        m = 2 * (size - filled) + 8  # a pass accepts more than half of its proposals
        u = source.below(t, m)
        d = _bernoulli_exp_fraction(source, u, np.full(m, t_arr))
        v = np.zeros(m, dtype=np.int64)
        kept = np.flatnonzero(d)
        v[kept] = _geometric_exp1(source, kept.size)
        x = u + t_arr * v
        negative = source.below(2, m) == 1
        ok = d & ~(negative & (x == 0))  # -0 is rejected so that 0 is not counted twice
        filled = _accepted_into(out, filled, np.where(negative, -x, x)[ok])
    return out


def noise_variance(sigma: float) -> Fraction:
    """The rational variance p/q >= sigma^2 used for ``sigma`` (p >= 2^20 unless sigma^2 > 2^20)."""
    sigma = float(sigma)
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
    s2 = Fraction(sigma) ** 2
    if s2 >= 2**20:
        return Fraction(math.ceil(s2))
    q = 2 ** max(0, math.ceil(math.log2(2**20 / s2)))
    while s2 * q < 2**20:
        q *= 2
    return Fraction(math.ceil(s2 * q), q)


def _gaussian_params(variance: Fraction) -> tuple[int, int, int]:
    p, q = variance.numerator, variance.denominator
    t = math.isqrt(p // q) + 1  # floor(sigma) + 1
    return p, q, t


def discrete_gaussian(source: RandomSource, variance: Fraction, size: int) -> np.ndarray:
    """``size`` exact draws with P(y) proportional to exp(-y^2 / (2 variance)), y integer."""
    variance = Fraction(variance)
    p, q, t = _gaussian_params(variance)
    den = 2 * p * q * t * t
    if den > _INT64_SAFE:  # sigma beyond ~2^15 or below ~2^-10: exact Python integers throughout
        return np.array([discrete_gaussian_scalar(source, variance) for _ in range(size)], dtype=np.int64)
    return gaussian_by_rejection(source, t, t * q, p, den, size)


def gaussian_by_rejection(source: RandomSource, t: int, a: int, b: int, den: int, size: int) -> np.ndarray:
    """CKS Algorithm 3's loop: discrete Laplace(t) proposals y, each kept with probability
    exp(-(a |y| - b)^2 / den) (integers, den <= 2^62); ``size`` accepted draws in draw order.
    `discrete_gaussian` (variance p/q: a = t q, b = p, den = 2 p q t^2) and
    `marginals.lattice.discrete_gaussian_tc` (variance t c: a = 1, b = c, den = 2 t c) share it."""
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        y = discrete_laplace(source, t, 2 * (size - filled) + 8)  # surplus proposals: fewer passes
        mag = np.abs(y)
        if int(mag.max(initial=0)) * a + b < 3_000_000_000:  # |m| < 3e9: m^2 fits in int64
            m = mag * np.int64(a) - np.int64(b)
            sq = m * m
            whole, num = sq // den, sq % den
        else:  # far tail: the square leaves int64, so form it with Python integers (whole capped: exp(-2^62) ~ 0)
            sq = [(int(v) * a - b) ** 2 for v in mag]
            whole = np.array([min(v // den, 2**62) for v in sq], dtype=np.int64)
            num = np.array([v % den for v in sq], dtype=np.int64)
        accept = bernoulli_exp(source, whole, num, np.int64(den))
        filled = _accepted_into(out, filled, y[accept])
    return out


def _bernoulli_exp_fraction_scalar(source: RandomSource, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den on Python integers (CKS Algorithm 1)."""
    k = 1
    while source.randbelow(den * k) < num:  # Bernoulli(gamma / k)
        k += 1
    return k % 2 == 1


def _bernoulli_exp_scalar(source: RandomSource, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for any non-negative rational, on Python integers."""
    whole, num = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_fraction_scalar(source, 1, 1):
            return False
    return _bernoulli_exp_fraction_scalar(source, num, den)


def discrete_gaussian_scalar(source: RandomSource, variance: Fraction) -> int:
    """One exact discrete Gaussian draw on Python integers (CKS Algorithms 1-3, unvectorized)."""
    p, q, t = _gaussian_params(Fraction(variance))
    while True:
        u = source.randbelow(t)
        if not _bernoulli_exp_scalar(source, u, t):
            continue
        v = 0
        while _bernoulli_exp_fraction_scalar(source, 1, 1):
            v += 1
        x = u + t * v
        negative = source.randbelow(2) == 1
        if negative and x == 0:
            continue
        y = -x if negative else x
        if _bernoulli_exp_scalar(source, (abs(y) * t * q - p) ** 2, 2 * p * q * t * t):
            return y


def _cks_fixed(source: RandomSource, num: np.ndarray, den: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `_FIXED_STEPS` steps of CKS Algorithm 1 (Bernoulli(exp(-num/den)), 0 <= num <=
    den, scalar den) on every element, whatever its value: the same draws and array operations
    for any input. Returns (result, unfinished); unfinished runs (probability <= 1/steps! each)
    are completed by `_bernoulli_exp_fraction(..., start=_FIXED_STEPS + 1)`."""
    alive = np.ones(num.size, dtype=bool)
    odd = np.zeros(num.size, dtype=bool)
    for k in range(1 if den > 1 else 2, _FIXED_STEPS + 1):  # den = 1 (gamma = 1): K = 1 always succeeds
        a = source.below(den * k, num.size) < num  # Bernoulli(num / (den k))
        if k % 2:
            odd |= alive & ~a
        alive &= a
    return odd, alive


def _finish(source: RandomSource, result: np.ndarray, unfinished: np.ndarray, num: np.ndarray, den: int) -> None:
    """Complete `_cks_fixed`'s unfinished runs in place (exactly, with the variable-length loop)."""
    if unfinished.any():
        idx = np.flatnonzero(unfinished)
        result[idx] = _bernoulli_exp_fraction(source, num[idx], np.full(idx.size, den, dtype=np.int64),
                                              start=_FIXED_STEPS + 1)  # fmt: skip


def _bernoulli_exp_fixed_work(source: RandomSource, whole: np.ndarray, num: np.ndarray, den: int) -> np.ndarray:
    """Bernoulli(exp(-(whole + num/den))) elementwise, exactly, with work that does not depend on
    the values except with small probability: the fractional part and `_FIXED_ROUNDS`
    Bernoulli(exp(-1)) trials of the integer part run for every element; only runs left
    unfinished and integer parts beyond the fixed rounds (each reached with probability <=
    e^-rounds) take the variable-length path."""
    result, unfinished = _cks_fixed(source, num, den)
    _finish(source, result, unfinished, num, den)
    one = np.ones(num.size, dtype=np.int64)
    for r in range(1, _FIXED_ROUNDS + 1):
        trial, unfinished = _cks_fixed(source, one, 1)  # Bernoulli(exp(-1)) for every element
        _finish(source, trial, unfinished & result & (whole >= r), one, 1)
        result &= trial | (whole < r)
    rest = np.flatnonzero(result & (whole > _FIXED_ROUNDS))
    if rest.size:
        zero = np.zeros(rest.size, dtype=np.int64)
        result[rest] = bernoulli_exp(source, whole[rest] - _FIXED_ROUNDS, zero, np.int64(1))
    return result


def exponential_choice(source: RandomSource, logits: np.ndarray) -> int:
    """An index drawn exactly with probability proportional to exp(logits) (after 2^-40 rounding)."""
    logits = np.asarray(logits, dtype=np.float64)
    x = logits.max() - logits  # >= 0, the best candidate at exactly 0
    x = np.minimum(x, float(_INT64_SAFE // 2))  # exp(-2^61) is 0 for every practical purpose
    whole = np.floor(x)
    num = np.rint((x - whole) * 2.0**_EM_BITS).astype(np.int64)  # x - floor(x) is exact in floats
    whole = whole.astype(np.int64)
    carry = num == 2**_EM_BITS
    whole[carry] += 1
    num[carry] = 0
    n = x.size
    batch = max(3 * n, 64)  # a pass accepts with probability >= 1 - e^-3 even when one candidate dominates
    while True:
        proposals = source.below(n, batch)
        accepted = _bernoulli_exp_fixed_work(source, whole[proposals], num[proposals], 2**_EM_BITS)
        if accepted.any():
            return int(proposals[int(np.argmax(accepted))])

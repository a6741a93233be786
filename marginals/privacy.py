"""Privacy accounting in zero-concentrated DP (zCDP) and its conversion to (epsilon, delta)-DP.

Conversion: the tight bound of Canonne, Kamath and Steinke (2020, "The Discrete Gaussian for
Differential Privacy", Prop. 12 / Cor. 13): a rho-zCDP mechanism is (eps, delta)-DP with

    delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha.

The log of the objective is strictly convex in alpha, so its minimiser is the root of the
derivative (2 alpha - 1) rho - eps + log(1 - 1/alpha), found with Brent's method to machine
precision (searched over log(alpha - 1), so tiny rho converges too). `cdp_rho` and `cdp_eps`
invert it in log space (`cdp_log_delta`), so deltas down to the smallest floats are exact;
epsilon above `MAX_EPSILON` is refused (rho would overflow).

Budgets are checked by one validator per concept: `check_epsilon`, `check_delta` and
`check_epsilon_delta` (what every mechanism and estimator taking an (epsilon, delta) budget calls).

`Accountant` is the one ledger every noisy release goes through. Charges (sequential
composition in zCDP): a Gaussian or an exponential mechanism, priced by its privacy map
(`marginals.maps`), or a raw rho. A ledger may record its privacy unit (``unit``, a
`marginals.units.PrivacyUnit`: the rows of one person, at most k of them); None is one row. Its
charges are then priced for that unit (each records the sensitivity it was charged for).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from scipy.optimize import brentq

from .maps import ExponentialMap, GaussianMap
from .units import PrivacyUnit

#: relative slack allowed when a charge meets the budget exactly (floating-point sums).
BUDGET_RTOL = 1e-9


#: largest epsilon the conversions accept: beyond it rho no longer fits in a float (and no
#: meaningful privacy is left anyway).
MAX_EPSILON = 1e100

#: alpha - 1 is searched in [_AM1_LO, _AM1_HI] (on a log scale, so any rho > 0 converges).
_AM1_LO, _AM1_HI = 1e-12, 1e150


def _log_delta_am1(rho: float, eps: float, am1: float) -> float:
    """log of the CKS20 bound at alpha = 1 + am1, written in am1 so that it stays exact near alpha = 1:
    (a-1)(a rho - eps) + a log(1 - 1/a) - log(a-1) = am1 (a rho - eps) - log(am1) - a log1p(1/am1)
    (no cancellation between large terms for large alpha either)."""
    alpha = 1.0 + am1
    return am1 * (alpha * rho - eps) - math.log(am1) - alpha * math.log1p(1.0 / am1)


def cdp_log_delta(rho: float, eps: float) -> float:
    """log of `cdp_delta` (-inf for rho = 0), computed without leaving log space, so it is exact
    for deltas far below the smallest float (used by `cdp_rho` and `cdp_eps`)."""
    rho, eps = float(rho), float(eps)
    if rho < 0 or eps < 0 or not (math.isfinite(rho) and math.isfinite(eps)):
        raise ValueError(f"cdp_delta needs finite rho >= 0 and eps >= 0, got rho={rho}, eps={eps}")
    if rho == 0:
        return -math.inf

    def slope(log_am1: float) -> float:  # derivative of the log bound in alpha, at alpha = 1 + exp(log_am1)
        am1 = math.exp(log_am1)
        return (1 + 2 * am1) * rho - eps - math.log1p(1.0 / am1)  # log(am1) - log(1 + am1)

    lo, top = math.log(_AM1_LO), math.log(_AM1_HI)
    if slope(lo) >= 0:
        # rho - eps > ~27: the minimiser is within 1e-12 of alpha = 1, where the bound tends to 1;
        # the value at lo is a valid (and essentially tight) delta.
        return min(0.0, _log_delta_am1(rho, eps, _AM1_LO))
    hi = math.log(max(1.0, (eps + 1) / (2 * rho) + 1)) if (eps + 1) / (2 * rho) < _AM1_HI else top
    while hi < top and slope(hi) <= 0:
        hi = min(top, hi + math.log(2.0))
    if slope(hi) <= 0:  # the minimiser lies beyond alpha ~ 1e150: the bound there is already ~0
        return min(0.0, _log_delta_am1(rho, eps, _AM1_HI))
    log_am1 = brentq(slope, lo, hi, xtol=1e-15, rtol=1e-15, maxiter=500)
    return min(0.0, _log_delta_am1(rho, eps, math.exp(log_am1)))


def cdp_delta(rho: float, eps: float) -> float:
    """Smallest delta such that rho-zCDP implies (eps, delta)-DP (tight CKS20 conversion)."""
    return math.exp(cdp_log_delta(rho, eps))


def check_epsilon(epsilon: float) -> float:
    """epsilon as a float after checking 0 < epsilon <= `MAX_EPSILON` (finite)."""
    epsilon = float(epsilon)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    if epsilon > MAX_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g}, got {epsilon:g}")
    return epsilon


def check_delta(delta: float) -> float:
    """delta as a float after checking 0 < delta < 1."""
    delta = float(delta)
    if not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return delta


def check_epsilon_delta(epsilon: float, delta: float) -> tuple[float, float]:
    """An (epsilon, delta)-DP budget as floats: the one check every mechanism and conversion uses."""
    return check_epsilon(epsilon), check_delta(delta)


def cdp_rho(eps: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (eps, delta)-DP."""
    return _cdp_rho(*check_epsilon_delta(eps, delta))


@functools.lru_cache(maxsize=4096)
def _cdp_rho(eps: float, delta: float) -> float:
    """`cdp_rho` of checked floats, memoized (a pure function of public budget parameters; every
    fit of an estimator asks for the same few)."""
    log_delta = math.log(delta)
    # delta(rho) increases from 0 (rho -> 0) to 1: bracket the crossing, then solve in log space.
    hi = eps + 1.0
    while cdp_log_delta(hi, eps) <= log_delta:
        hi *= 2
    lo = hi / 2
    while cdp_log_delta(lo, eps) > log_delta:
        lo /= 2
    rho = brentq(lambda r: cdp_log_delta(r, eps) - log_delta, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    while cdp_delta(rho, eps) > delta:  # round toward safety: never report a rho that breaks delta
        rho = math.nextafter(rho, 0.0)
    return rho


def cdp_eps(rho: float, delta: float) -> float:
    """Smallest eps such that rho-zCDP implies (eps, delta)-DP."""
    rho, delta = float(rho), check_delta(delta)
    if rho < 0 or not math.isfinite(rho):
        raise ValueError(f"rho must be a finite number >= 0, got {rho}")
    if rho == 0:
        return 0.0
    log_delta = math.log(delta)
    if cdp_log_delta(rho, 0.0) <= log_delta:
        return 0.0
    hi = rho + 2 * math.sqrt(rho * math.log(1 / delta))  # the classic bound: always sufficient
    while cdp_log_delta(rho, hi) > log_delta:  # (guards rounding in the classic bound)
        hi *= 2
    eps = brentq(lambda e: cdp_log_delta(rho, e) - log_delta, 0.0, hi, xtol=1e-300, rtol=1e-15, maxiter=500)
    while cdp_delta(rho, eps) > delta:  # round toward safety: the reported eps must hold
        eps = math.nextafter(eps, math.inf)
    return eps


class BudgetExceeded(RuntimeError):
    """A charge would take the ledger over its budget; nothing was recorded."""


@dataclass(frozen=True)
class Charge:
    """One entry of the privacy ledger."""

    label: str
    mechanism: str
    rho: float
    params: dict = field(default_factory=dict)


class Accountant:
    """A zCDP ledger with a fixed budget ``rho``; refuses any charge that would exceed it.

    Example:
        >>> acct = Accountant(cdp_rho(1.0, 1e-9), delta=1e-9)
        >>> acct.gaussian(sigma=20.0, label="age")
        0.00125
        >>> acct.remaining > 0
        True
    """

    def __init__(self, rho: float, delta: float | None = None, unit: PrivacyUnit | None = None) -> None:
        rho = float(rho)
        if not (rho > 0 and math.isfinite(rho)):
            raise ValueError(f"the zCDP budget rho must be a finite number > 0, got {rho}")
        if unit is not None and not isinstance(unit, PrivacyUnit):
            raise TypeError(f"unit must be a marginals.units.PrivacyUnit or None, got {type(unit).__name__}")
        self.rho = rho
        self.delta = None if delta is None else check_delta(delta)
        self.unit = unit
        self._charges: list[Charge] = []
        self._spent = 0.0

    @classmethod
    def from_epsilon(cls, epsilon: float, delta: float, unit: PrivacyUnit | None = None) -> "Accountant":
        """A ledger whose total budget is (epsilon, delta)-DP, converted to zCDP."""
        return cls(cdp_rho(epsilon, delta), delta=delta, unit=unit)

    @property
    def sensitivity(self) -> int:
        """Rows one privacy unit may hold, the count sensitivity its charges are priced for (1: one row)."""
        return 1 if self.unit is None else self.unit.sensitivity

    @property
    def charges(self) -> tuple[Charge, ...]:
        return tuple(self._charges)

    @property
    def spent(self) -> float:
        """Total rho charged so far (compensated sum, updated once per charge)."""
        return self._spent

    @property
    def remaining(self) -> float:
        """Budget left, never negative."""
        return max(0.0, self.rho - self.spent)

    def can_afford(self, rho: float) -> bool:
        """Whether a charge of ``rho`` fits in the remaining budget (within the tolerance)."""
        return self.spent + rho <= self.rho * (1 + BUDGET_RTOL)

    def charge(self, rho: float, label: str = "", mechanism: str = "raw", **params) -> float:
        """Record a raw zCDP charge; raise `BudgetExceeded` (recording nothing) if it does not fit."""
        rho = float(rho)
        if not (rho >= 0 and math.isfinite(rho)):
            raise ValueError(f"a charge must be a finite rho >= 0, got {rho}")
        if not self.can_afford(rho):
            raise BudgetExceeded(
                f"charge {label!r} of rho={rho:.6g} exceeds the remaining budget "
                f"{self.remaining:.6g} (spent {self.spent:.6g} of {self.rho:.6g})"
            )
        self._charges.append(Charge(label, mechanism, rho, dict(params)))
        self._spent = math.fsum(c.rho for c in self._charges)
        return rho

    def gaussian(self, sigma: float, sensitivity: float = 1.0, label: str = "") -> float:
        """Charge a Gaussian mechanism with noise scale ``sigma`` and L2 ``sensitivity``."""
        sigma, sensitivity = float(sigma), float(sensitivity)
        if not (sigma > 0 and math.isfinite(sigma)):
            raise ValueError(f"sigma must be a finite number > 0, got {sigma}")
        if not (sensitivity >= 0 and math.isfinite(sensitivity)):
            raise ValueError(f"sensitivity must be finite and >= 0, got {sensitivity}")
        return self.charge(GaussianMap(sensitivity).rho(sigma), label, "gaussian", sigma=sigma, sensitivity=sensitivity)

    def exponential(self, epsilon: float, label: str = "") -> float:
        """Charge an exponential mechanism run with parameter ``epsilon`` (eps^2/8 zCDP)."""
        epsilon = check_epsilon(epsilon)
        return self.charge(ExponentialMap().rho(epsilon), label, "exponential", epsilon=epsilon)

    def epsilon(self, delta: float | None = None, spent: bool = True) -> float:
        """The (eps, delta)-DP epsilon of what was spent (or of the whole budget)."""
        delta = self.delta if delta is None else delta
        if delta is None:
            raise ValueError("pass delta (the accountant was created without one)")
        return cdp_eps(self.spent if spent else self.rho, delta)

    def to_dict(self) -> dict:
        """A JSON-ready copy of the ledger (``unit`` only when the unit is not one row)."""
        out = {
            "rho": self.rho,
            "delta": self.delta,
            "charges": [
                {"label": c.label, "mechanism": c.mechanism, "rho": c.rho, "params": c.params} for c in self._charges
            ],
        }
        if self.unit is not None:
            out["unit"] = self.unit.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Accountant":
        """Rebuild a ledger written by `to_dict` (charges re-checked against the budget)."""
        unit = data.get("unit")
        acct = cls(data["rho"], data.get("delta"), None if unit is None else PrivacyUnit.from_dict(unit))
        for c in data["charges"]:
            acct.charge(c["rho"], c["label"], c["mechanism"], **c.get("params", {}))
        return acct

    def summary(self) -> str:
        """A readable ledger: each mechanism's total, then the budget in zCDP and (eps, delta)."""
        lines = [f"privacy ledger: {len(self._charges)} charge(s)"]
        if self.unit is not None:
            lines.append(f"  {self.unit.describe()}")
        kinds: dict[str, list[Charge]] = {}
        for c in self._charges:
            kinds.setdefault(c.mechanism, []).append(c)
        for kind, items in kinds.items():
            total = math.fsum(c.rho for c in items)
            lines.append(f"  {kind:<12} {len(items):5d} charge(s)  rho = {total:.6g}")
        pct = 100 * self.spent / self.rho
        lines.append(f"  spent rho = {self.spent:.6g} of {self.rho:.6g} ({pct:.2f}%), remaining {self.remaining:.6g}")
        if self.delta is not None:
            lines.append(
                f"  as (eps, delta)-DP with delta = {self.delta:g}: spent eps = {self.epsilon():.6g}, "
                f"budget eps = {self.epsilon(spent=False):.6g}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Accountant(rho={self.rho:.6g}, spent={self.spent:.6g}, charges={len(self._charges)})"

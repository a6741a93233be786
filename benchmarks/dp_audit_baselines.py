"""TukeyEM and PMT audits of `benchmarks.dp_audit` (the regression baselines of `ddssp.baselines`).

``TukeyEM depth step``: `ddssp.baselines.tukey.tukey_em` on one feature (x = 1, so each model is
its subset's mean of y), m = `TUKEY_MODELS`, one row per subset. D's models are 1..m/2 and
m/2 + 1 + `TUKEY_GAP` .. m + `TUKEY_GAP`; D' adds the row (x = 1, y = 2 * FAR - 1), which joins
the subset of the leftmost model and moves it to FAR (one model changes, as the privacy argument
says a row can). The partition is held fixed (`FixedPartition`: the identity permutation), i.e.
the audit conditions on the coupling the proof of Thm 3.10 conditions on; with a random
partition the moved model is a random one and the effect is diluted below what N runs can see.
The PTR distance k is the same on both sides for this pair (recorded in ``params``), so the PTR's
outcome has the same distribution on D and D' and the coefficient's privacy loss is that of the
depth step: the claim audited is its share, eps/2 (with delta). T = coef (a failed PTR maps to
`FAILED`). The real mechanism uses Algorithm 3's weights exp(eps/2 * i / 2) (``monotone=False``);
the broken control is ``monotone=True``, weights exp(eps/2 * i), which the paper justifies only
for neighbours that add or remove a whole model: here it loses up to about 2 x the share.
At eps = 2 the event {coef > ~m/2 + gap} has probabilities about 0.05 (D) and 0.27 (D') with
those weights: a ratio of e^1.7 against the claimed e^1.0 (exact, from the 1-D depth regions).

``PMT ridge``: `ddssp.baselines.pmt.pmt_ridge`, the algorithm `PMTLinearRegression` runs, on the
encoded rows of two replace-one neighbours (mu^2/2-zCDP, n public): n rows with x = 1, half y = +1 and
half y = -1; D' turns one y = -1 into +1. The public second moment (0.01 for x and for y, plus the
estimator's ``moment_ridge``) is small, so every transformed row is clipped to the radii R and
R_y and the cross moment moves by exactly its sensitivity 2 R R_y / n; the Gram matrix does not
move, and with the cross moment near 0 its noise only rescales coef. T = coef: it sees the cross
release alone, (mu / sqrt(2))^2/2-zCDP, so the bound stays below cdp_eps of that < claim.
Claim: (epsilon, delta), with mu = sqrt(2 cdp_rho(epsilon, delta)) as the estimator. Broken: the fit run at 4 mu (noise / 4)
claiming the original (epsilon, delta). `pmt_audit_arrays` fits the estimator once for its
encoding; tests/test_benchmarks_dp_audit.py checks that `pmt_ridge` on those arrays replays the estimator.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ddssp.baselines.pmt import pmt_ridge
from ddssp.baselines.pmt_models import PMTLinearRegression
from ddssp.baselines.tukey import tukey_em
from marginals import Dataset, Domain, cdp_rho
from marginals.randomness import RandomSource

from benchmarks.dp_audit_stats import BROKEN_FACTOR, audit_samples

TUKEY_MODELS = 400
TUKEY_GAP = 10
FAR = 1e6
FAILED = -1e12  # T of a fit whose PTR check failed
#: public uncentred second moment of Z = [x, y] for the PMT audit (before ``moment_ridge``)
PMT_MOMENT = np.array([[0.01, 0.0], [0.0, 0.01]])


class FixedPartition(RandomSource):
    """``base``'s draws, except that `permutation` is the identity: TukeyEM's partition is fixed
    (row k in subset k mod m). Counts the permutations asked for, so a change of how `tukey_em`
    partitions cannot silently turn the conditional audit into an unconditional one."""

    private = False

    def __init__(self, base: RandomSource) -> None:
        self.base = base
        self.permutations = 0

    def uint64(self, size: int) -> np.ndarray:
        return self.base.uint64(size)

    def randbelow(self, n: int) -> int:
        return self.base.randbelow(n)

    def permutation(self, x: int | np.ndarray) -> np.ndarray:
        self.permutations += 1
        return np.arange(x) if isinstance(x, (int, np.integer)) else np.asarray(x)

    def __repr__(self) -> str:
        return f"FixedPartition({self.base!r})"


def tukey_neighbours(models: int = TUKEY_MODELS, gap: int = TUKEY_GAP) -> list[tuple[np.ndarray, np.ndarray]]:
    """[(X, y) of D, (X, y) of D']: one feature x = 1; D' adds the row that moves model 0 to FAR."""
    half = models // 2
    y = np.concatenate([np.arange(1, half + 1), np.arange(half + 1, models + 1) + gap]).astype(np.float64)
    X = np.ones((models, 1))
    # the added row lands with row 0 (y = 1) under the identity partition: their mean is FAR
    return [(X, y), (np.vstack([X, [[1.0]]]), np.append(y, 2 * FAR - 1))]


def audit_tukeyem(runs: int, broken: bool, source: RandomSource, confidence: float,
                  epsilon: float = 2.0, delta: float = 1e-5) -> dict:
    """The TukeyEM row: Algorithm 3's weights (broken: the monotone weights), claim eps/2."""
    monotone = bool(broken)
    fixed = FixedPartition(source)
    stats, distances, failures = [], [], 0
    for X, y in tukey_neighbours():
        coefs = np.empty(runs)
        for i in range(runs):
            result = tukey_em(X, y, n_models=TUKEY_MODELS, epsilon=epsilon, delta=delta, rng=fixed,
                              monotone=monotone)
            coefs[i] = result.coef[0] if result.passed else FAILED
            failures += not result.passed
        distances.append(getattr(result, "distance", None))
        stats.append(coefs)
    if fixed.permutations < 2 * runs:
        raise RuntimeError("tukey_em did not partition through rng.permutation: the fixed partition did not apply")
    result = audit_samples(stats[0], stats[1], delta, confidence)
    return {**result, "eps_claim": epsilon / 2, "delta": delta,
            "params": {"epsilon": epsilon, "models": TUKEY_MODELS, "gap": TUKEY_GAP, "monotone": monotone,
                       "ptr_distance": distances, "ptr_failures": failures}}


def _pmt_table(plus: int, minus: int) -> Dataset:
    """Rows (x = 1, y code 1) ``plus`` times and (x = 1, y code 0) ``minus`` times."""
    df = pd.DataFrame({"x": np.ones(plus + minus, dtype=np.int64), "y": np.r_[np.ones(plus), np.zeros(minus)]})
    return Dataset(df.astype(np.int64), Domain(["x", "y"], [2, 2]))


def pmt_audit_tables(rows: int = 1000) -> tuple[Dataset, Dataset]:
    """Replace-one neighbours: half y = +1 / half -1, and one -1 turned into +1."""
    half = rows // 2
    return _pmt_table(half, rows - half), _pmt_table(half + 1, rows - half - 1)


def pmt_audit_arrays(tables, epsilon: float, delta: float, source: RandomSource) -> tuple[list, PMTLinearRegression]:
    """The encoded (X, y) of each table, by an estimator fitted once on the first (its encoding)."""
    model = PMTLinearRegression(epsilon, delta, "y", public_moment=PMT_MOMENT, insecure_seed=source).fit(tables[0])
    return [model.encoding_.encode(t.to_df()) for t in tables], model


def pmt_fit_coef(X: np.ndarray, y: np.ndarray, model: PMTLinearRegression, mu: float, source: RandomSource) -> float:
    """coef_[0] of one DP-PMT ridge fit with ``model``'s parameters at ``mu`` (what ``fit`` computes)."""
    moment = PMT_MOMENT[:1, :1] + model.moment_ridge * np.eye(1)
    return float(pmt_ridge(X, y, moment, float(PMT_MOMENT[1, 1]), mu, model.ridge, model.eta, source).coef[0])


def pmt_mu(epsilon: float, delta: float) -> float:
    """The mu `PMTLinearRegression` runs its releases at: sqrt(2 cdp_rho(epsilon, delta))."""
    return math.sqrt(2.0 * cdp_rho(epsilon, delta))


def audit_pmt(runs: int, broken: bool, source: RandomSource, confidence: float,
              epsilon: float = 1.0, delta: float = 1e-3, rows: int = 1000) -> dict:
    """The PMT row: T = coef on replace-one neighbours; broken: 4 mu claiming mu."""
    arrays, model = pmt_audit_arrays(pmt_audit_tables(rows), epsilon, delta, source)
    mu = pmt_mu(epsilon, delta)
    used = mu * BROKEN_FACTOR if broken else mu
    stats = [np.array([pmt_fit_coef(X, y, model, used, source) for _ in range(runs)]) for X, y in arrays]
    result = audit_samples(stats[0], stats[1], delta, confidence)
    return {**result, "eps_claim": epsilon, "delta": delta,
            "params": {"epsilon": epsilon, "mu": mu, "mu_used": used, "rows": rows}}

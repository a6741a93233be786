"""TukeyEM (Amin, Joseph, Ribero & Vassilvitskii): DP linear regression by a private
approximate-Tukey-median of OLS models fitted on disjoint subsets of the private rows.

The algorithm (partition, depth volumes, PTR, restricted exponential mechanism, exact-depth
sampling) lives in `ddssp.baselines.tukey`; this module wraps it as an estimator on encoded
tables. TukeyEM needs no norm bounds, only the number of models m: each of the m subsets needs at
least one row per encoded feature (n >= m p), and m is never derived from the private n (the
privacy proof holds m fixed); a fit with too few rows is refused with the rule to choose m by.

It can fail: when the propose-test-release check does not pass, the fit warns `PTRFailedWarning`
and holds the documented fallback, the zero model on the encoded scale (``coef_`` zeros,
``intercept_`` 0: every prediction is the centre of the target's public code range; data-independent,
so it costs nothing), with ``ptr_passed_ = False``; ``predict`` / ``score`` (and so
``cross_val_score``) work, and the caller may substitute a better fallback.

Accounting: (epsilon, delta)-DP under add/remove-one-row neighbours (eps/2 for the PTR check,
eps/2 for the restricted exponential mechanism with Algorithm 3's weights, delta for the PTR
failure), from the paper's own analysis (Thm 3.10). Like ObjPert it is approximate DP only, so it
cannot be charged to the zCDP `marginals.Accountant`; the guarantee is recorded in ``privacy_``.
``monotone=True`` (section 3.3.1's weights) is private only when a neighbour adds a whole model,
not a row (see `ddssp.baselines.tukey`): it warns `MonotoneWeightsWarning`, and the fit records
``private_ = False`` and the neighbouring relation it does cover.

A fitted TukeyEM holds only what the guarantee covers (``_released_attributes``): never the exact
PTR distance, the depth volumes or the sampled depth, and its messages never quote them.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from marginals.randomness import NoiseSource

from ..base import DPEstimator, LinearRegressor
from ..encoding import Encoding, EncodingOptions
from ..inputs import DomainLike
from .common import encoded_rows
from .tukey import MonotoneWeightsWarning, tukey_em

__all__ = ["MonotoneWeightsWarning", "PTRFailedWarning", "TukeyEM"]


class PTRFailedWarning(UserWarning):
    """TukeyEM's propose-test-release check failed: the fit released no model and predicts with the zero model."""


class TukeyEM(DPEstimator, LinearRegressor):
    """Differentially private linear regression by the approximate Tukey median of m OLS models.

    Args:
        epsilon, delta: the (epsilon, delta)-DP guarantee of one fit (add/remove one row).
        target, categorical, encoding, domain: as for `AdaSSP` (linear targets only).
        n_models: m, the number of disjoint subsets (even, >= 4). Rule: m <= n / p (n rows, p encoded
            features incl. the intercept: each subset needs one row per feature), else the fit is refused.
            The paper: m = 1000 is typically near-optimal; PTR needs m roughly proportional to
            1/epsilon and growing with p (so few features, or many rows: one-hot adult has p = 250).
        monotone: False (default) samples depths with Algorithm 3's P[i] ~ W_i exp(eps/2 * i / 2).
            True uses section 3.3.1's exp(eps/2 * i), which is NOT private under row-level neighbours
            (adding a row swaps a model; the loss reaches eps): it warns and sets ``private_ = False``.
        jitter: scale of the U(0, 1) perturbation of the models that avoids zero-volume regions.
        accountant: must be None (approximate DP; see the module docstring).
        insecure_seed: None (default: noise from the OS's secure source), or for tests only an int
            seed / `marginals.InsecureRandom`, which warns and sets ``private_ = False``.

    Learned (only released quantities): ``ptr_passed_``, ``coef_``/``intercept_`` (the zero model if PTR failed),
    ``noisy_distance_`` (the Laplace release of the PTR check), ``threshold_``, ``n_models_``,
    ``private_``, ``privacy_`` ({"epsilon", "delta", "mechanism", "neighbours", "private"}).
    """

    _guarantee = "(epsilon, delta)-DP from propose-test-release"
    _released_attributes = {
        "ptr_passed_": "the PTR outcome: post-processing of the noisy distance",
        "noisy_distance_": "the PTR check's release: the distance bound plus Laplace noise (eps/2)",
        "threshold_": "the PTR pass threshold log(1 / (2 delta)) / (eps/2): public",
        "n_models_": "m, a hyperparameter",
    }

    def __init__(
        self, epsilon: float, delta: float, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, n_models: int = 1000, monotone: bool = False,
        jitter: float = 1e-10, accountant: Any = None, insecure_seed: NoiseSource = None,
        domain: DomainLike = None,
    ) -> None:  # fmt: skip
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.n_models = n_models
        self.monotone = monotone
        self.jitter = jitter
        self.accountant = accountant
        self.insecure_seed = insecure_seed
        self.domain = domain

    def _check_params(self) -> None:
        super()._check_params()
        if not (self.jitter >= 0 and np.isfinite(self.jitter)):
            raise ValueError(f"jitter must be a finite number >= 0, got {self.jitter}")
        if isinstance(self.n_models, bool) or not isinstance(self.n_models, (int, np.integer)):
            raise TypeError(f"n_models must be an int, got {self.n_models!r}")

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        """Fit on the private rows in memory; when the PTR check fails it warns and holds the zero model
        (``ptr_passed_`` False)."""
        X, y = encoded_rows("TukeyEM", source, encoding)
        rng = self._noise()
        result = tukey_em(X, y, int(self.n_models), float(self.epsilon), float(self.delta), rng,
                          bool(self.monotone), float(self.jitter))  # fmt: skip
        if self.monotone:  # tukey_em warned: private only for add/remove-one-model neighbours
            self.private_ = False
            self._record_privacy("TukeyEM with monotone depth weights: PTR check (eps/2) + exponential mechanism "
                                 "private only when a neighbour adds a whole model",
                                 neighbours="add/remove one model (NOT one row)")  # fmt: skip
        else:
            self._record_privacy("TukeyEM: PTR check (eps/2) + restricted exponential mechanism (eps/2)",
                                 neighbours="add/remove one row")  # fmt: skip
        self.ptr_passed_ = result.passed
        self.noisy_distance_ = float(result.noisy_distance)
        self.threshold_ = result.threshold
        self.n_models_ = result.n_models
        if result.passed:
            self._set_solution(result.coef, encoding)
            return
        self._set_solution(np.zeros(X.shape[1]), encoding)  # the documented fallback: the zero model
        warnings.warn(
            f"TukeyEM released no model: the PTR check failed (noisy distance {self.noisy_distance_:.3g} < threshold "
            f"{self.threshold_:.3g}); predicting with the zero model (the centre of the target's code range, "
            "ptr_passed_ = False). More models (n_models, up to n / p) or a larger epsilon make PTR pass more often",
            PTRFailedWarning, stacklevel=3,
        )  # fmt: skip

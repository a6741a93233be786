"""AdaSSP (Wang 2018, Alg. 2; Ferrando & Sheldon, Appendix B): adaptive sufficient-statistics perturbation.

Three Gaussian releases, each with add/remove-one-row sensitivity from the public norm bounds
||X|| and ||Y|| (Prop. 3.1):
1. lambda_min(X^T X), sensitivity ||X||^2, released shifted down by sqrt(log(6/delta)) of its
   noise standard deviations (Wang's lower-confidence shift) and clipped at 0;
2. X^T X, sensitivity ||X||^2 (Frobenius norm of x x^T), noise a *symmetric* Gaussian matrix
   (upper triangle i.i.d., mirrored);
3. X^T y, sensitivity ||X|| ||Y||.
Then lambda = max(0, sigma_2 sqrt(p log(2 p^2 / failure_prob)) - noisy lambda_min) and
theta = (noisy X^T X + lambda I)^-1 noisy X^T y.

Calibration (our choice, differs from the paper): the budget is converted once to zCDP,
rho = cdp_rho(epsilon, delta) (tight CKS20 conversion), split by ``budget_split`` and each
release gets sigma_i = Delta_i / sqrt(2 rho_i). Gaussian releases compose additively in zCDP, so
the whole fit is rho-zCDP, hence (epsilon, delta)-DP, for any epsilon. The paper's calibration
sigma = sqrt(log(2/delta_i)) Delta / epsilon_i with basic composition is not a valid
(epsilon_i, delta_i) Gaussian mechanism once epsilon_i exceeds about 0.3 (the exact privacy
profile of Balle & Wang 2018 gives delta 3.5e-6 > 3.3e-6 at epsilon_i = 1/3), and it wastes
budget in the composition: at epsilon = 0.5, delta = 1e-5 our sigmas are 0.61x the paper's
(equal thirds), so AdaSSP here is somewhat more accurate than the paper's numbers.

Exact noise (`marginals.lattice`): each release is snapped to a 2^-k lattice and gets exact
discrete Gaussian noise, rho_i-zCDP at the lattice sensitivity Delta_i / gamma + sqrt(d_i) (the
rounding folded in; d_i = 1, p (p + 1) / 2 upper-triangle entries, p). The variance is chosen so
that this cost is <= rho_i; the accountant is charged the cost actually incurred (sensitivity with
rounding, variance actually used), so spent <= rho. ``sigmas_`` are the stds actually used.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from marginals import Accountant, BudgetExceeded, cdp_rho
from marginals.lattice import lattice_gaussian, symmetric_lattice_gaussian
from marginals.randomness import NoiseSource

from ..base import DPEstimator, LinearRegressor
from ..encoding import Encoding, EncodingOptions
from ..inputs import DomainLike
from ..solvers import solve_linear_system
from .common import private_statistics

STEPS = ("lambda_min", "XtX", "Xty")


class AdaSSP(DPEstimator, LinearRegressor):
    """Differentially private linear regression by adaptive sufficient-statistics perturbation.

    Args:
        epsilon, delta: the (epsilon, delta)-DP guarantee of one fit (spent as zCDP rho).
        target, categorical, encoding, domain: as for `DDSSPLinearRegression`; the domain must be
            public: the sensitivities come from the encoding's norm bounds. ``fit(dataset)`` (a
            `marginals.Dataset`) needs ``target=``; ``fit(df)`` on a DataFrame of codes needs ``target=``
            and ``domain=``; ``fit(X, y)`` needs ``domain=`` (the levels are never read off the rows).
        failure_prob: Wang's rho, the failure probability in the ridge choice (paper: 0.05).
        budget_split: fractions of rho for (lambda_min, X^T X, X^T y); default equal thirds as
            in Wang's Alg. 2 (the DD-SSP code used 1/3, 0.633, 0.033).
        accountant: a `marginals.Accountant` to charge; None creates one of exactly
            (epsilon, delta) per fit. Exposed as ``accountant_``.
        insecure_seed: None (default: noise from the OS's secure source), or for tests only an int
            seed / `marginals.InsecureRandom`, which warns and sets ``private_ = False``.

    Learned: ``coef_``, ``intercept_``, ``sigmas_`` (noise std of each release), ``sensitivities_``,
    ``rho_parts_``, ``lambda_min_noisy_``, ``XtX_noisy_``, ``Xty_noisy_`` (the three releases),
    ``ridge_`` (the chosen lambda), ``accountant_``, ``private_``, ``privacy_``.
    """

    _guarantee = ""  # rho-zCDP: charged to the accountant
    _released_attributes = {
        "rho_parts_": "the zCDP budget of each release: from the budget hyperparameters",
        "sensitivities_": "the releases' sensitivities: from the public domain's norm bounds",
        "sigmas_": "the noise standard deviations: from the budget and the sensitivities",
        "lambda_min_noisy_": "release 1: the noisy, shifted lambda_min(X^T X)",
        "XtX_noisy_": "release 2: X^T X plus symmetric Gaussian noise",
        "Xty_noisy_": "release 3: X^T y plus Gaussian noise",
        "ridge_": "the ridge lambda: post-processing of release 1",
        "accountant_": "the ledger: data-independent charges (sigma, sensitivity, label)",
    }

    def __init__(
        self, epsilon: float, delta: float, target: str | None = None,
        categorical: Sequence[str] | None = None, encoding: EncodingOptions | None = None,
        failure_prob: float = 0.05, budget_split: Sequence[float] = (1 / 3, 1 / 3, 1 / 3),
        accountant: Accountant | None = None, insecure_seed: NoiseSource = None,
        domain: DomainLike = None,
    ) -> None:  # fmt: skip
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.failure_prob = failure_prob
        self.budget_split = budget_split
        self.accountant = accountant
        self.insecure_seed = insecure_seed
        self.domain = domain

    def _check_params(self) -> None:
        super()._check_params()
        if not (0 < self.failure_prob < 1):
            raise ValueError(f"failure_prob must lie in (0, 1), got {self.failure_prob}")
        split = np.asarray(self.budget_split, dtype=np.float64)
        if split.shape != (3,) or not np.all(split > 0) or not np.all(np.isfinite(split)):
            raise ValueError(
                f"budget_split must be 3 positive fractions (lambda_min, XtX, Xty), got {self.budget_split!r}"
            )
        if abs(split.sum() - 1.0) > 1e-9:
            raise ValueError(f"budget_split must sum to 1, got {split.sum():.12g}")

    def _budget(self, encoding: Encoding) -> tuple[Accountant, np.ndarray]:
        """(the accountant, sensitivities of the three releases); rho_parts_ set, nothing charged yet."""
        x_bound, y_bound = encoding.norm_bounds()
        rho = cdp_rho(self.epsilon, self.delta)
        accountant = Accountant(rho, delta=float(self.delta)) if self.accountant is None else self.accountant
        if not accountant.can_afford(rho):
            raise BudgetExceeded(f"AdaSSP needs rho={rho:.6g} but the accountant has {accountant.remaining:.6g} left")
        self.rho_parts_ = np.asarray(self.budget_split, dtype=np.float64) * rho
        self.accountant_ = accountant
        return accountant, np.array([x_bound**2, x_bound**2, x_bound * y_bound])

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        """Fit on the private rows (a `Dataset` or a `DaskDataset`: X^T X and X^T y come from its exact
        pairwise marginals)."""
        stats = private_statistics("AdaSSP", source, encoding)
        rng = self._noise()
        accountant, self.sensitivities_ = self._budget(encoding)
        rhos = self.rho_parts_
        p = encoding.n_features
        lambda_min = max(0.0, float(np.linalg.eigvalsh(stats.XtX)[0])) if p else 0.0
        releases = [lattice_gaussian(rng, np.array([lambda_min]), self.sensitivities_[0], rhos[0]),
                    symmetric_lattice_gaussian(rng, stats.XtX, self.sensitivities_[1], rhos[1]),
                    lattice_gaussian(rng, stats.Xty, self.sensitivities_[2], rhos[2])]  # fmt: skip
        for step, release, sens in zip(STEPS, releases, self.sensitivities_):
            accountant.charge(release.rho, f"AdaSSP {step}", "gaussian", sigma=release.sigma, sensitivity=float(sens),
                              lattice_step=release.gamma, lattice_sensitivity=release.lattice_sensitivity)  # fmt: skip
        sigmas = np.array([r.sigma for r in releases])
        shift = math.sqrt(math.log(6.0 / self.delta)) * sigmas[0]
        self.lambda_min_noisy_ = max(0.0, float(releases[0].values[0]) - shift)
        self.XtX_noisy_ = releases[1].values
        self.Xty_noisy_ = releases[2].values
        bound = sigmas[1] * math.sqrt(p * math.log(2.0 * p**2 / self.failure_prob)) if p else 0.0
        self.ridge_ = max(0.0, bound - self.lambda_min_noisy_)
        self.sigmas_ = sigmas
        self._record_privacy("AdaSSP (Wang 2018), zCDP exact discrete Gaussian releases on a lattice")
        self._set_solution(solve_linear_system(self.XtX_noisy_ + self.ridge_ * np.eye(p), self.Xty_noisy_), encoding)

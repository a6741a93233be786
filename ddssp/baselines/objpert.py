"""ObjPert: approximate-DP objective perturbation for logistic regression (Kifer, Smith & Thakurta
2012; Ferrando & Sheldon, Appendix C).

With ||X|| a public bound on the feature-row norm (Prop. 3.1) and labels y in {-1, +1}, the
per-row log-loss has gradient norm <= ||X|| and Hessian eigenvalues <= ||X||^2 / 4. Then

    Delta = 2 (||X||^2 / 4) / epsilon = ||X||^2 / (2 epsilon),
    b ~ N(0, ||X||^2 (8 log(2/delta) + 4 epsilon) / epsilon^2 I),
    theta = argmin (1/n) sum log(1 + exp(-y x.theta)) + Delta/(2n) ||theta||^2 + b.theta / n

is (epsilon, delta)-DP, provided the minimum is found exactly (we run damped Newton on this
strongly convex objective to machine precision).

Accounting: the guarantee is (epsilon, delta)-DP from KST12's own analysis, not a Gaussian
mechanism on a bounded-sensitivity query, and an (epsilon, delta) guarantee with delta > 0 implies
no finite zCDP bound. So it cannot be charged to the zCDP `marginals.Accountant`: passing one
raises, and the guarantee is recorded in ``privacy_`` instead.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from marginals import Domain
from marginals.randomness import RandomSource, noise_source

from ..base import EncodedLinearModel
from ..encoding import EncodingOptions
from ..solvers import fit_logistic
from .common import check_privacy_params, encoded_rows


class ObjPert(EncodedLinearModel):
    """Differentially private logistic regression by objective perturbation.

    Args:
        epsilon, delta: the (epsilon, delta)-DP guarantee of one fit.
        target: a 2-level attribute (code 1 is the positive class).
        categorical, encoding: as for `DDSSPLinearRegression`.
        accountant: must be None (see the module docstring); kept so all baselines share the API.
        random_state: None (default: noise from the OS's secure source), or for tests only an int
            seed / `marginals.InsecureRandom`, which warns and sets ``private_ = False``.

    Learned: ``coef_``, ``intercept_``, ``regularization_`` (Delta), ``noise_std_`` (std of each
    entry of b), ``privacy_`` ({"epsilon", "delta", "mechanism"}).
    """

    def __init__(
        self,
        epsilon: float,
        delta: float,
        target: str,
        categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None,
        accountant: Any = None,
        random_state: int | RandomSource | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, data: Any, domain: Domain | None = None) -> "ObjPert":
        """Fit on the private rows: a `Dataset` or a DataFrame of codes with its ``domain``."""
        epsilon, delta = check_privacy_params(self.epsilon, self.delta)
        if self.accountant is not None:
            raise ValueError(
                "ObjPert's guarantee is (epsilon, delta)-DP from objective perturbation's own analysis, not zCDP, "
                "and no valid conversion to a zCDP charge exists; leave accountant=None and compose its "
                "(epsilon, delta) (recorded in privacy_) with other releases by (epsilon, delta) composition"
            )
        encoding, X, y = encoded_rows(self, data, domain, "logistic")
        rng = noise_source(self.random_state, "random_state")
        x_bound, _ = encoding.norm_bounds()
        n, p = X.shape
        regularization = x_bound**2 / (2.0 * epsilon)
        noise_std = x_bound * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * epsilon) / epsilon
        b = noise_std * rng.standard_normal(p)
        theta = fit_logistic(X, y, l2=regularization / n, linear=b / n)

        self.regularization_ = regularization
        self.noise_std_ = noise_std
        self.privacy_ = {"epsilon": epsilon, "delta": delta, "mechanism": "objective perturbation (KST12)",
                         "private": rng.private}
        self._set_solution(theta, encoding)
        return self

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

Noise and finite precision. b is drawn exactly: b = gamma Z with Z_i i.i.d. discrete Gaussian
N_Z(0, (sigma / gamma)^2) (`marginals.exact`, integer arithmetic; gamma the power of two at or
below sigma 2^-56), then converted to float64 for the solver. Its law is known exactly (no
inverse-CDF artifacts of a 53-bit uniform), and it is as fine as the float grid b must live on
anyway. KST's (epsilon, delta) proof is a density argument for real-valued b and exact
minimisation; it does not transfer to any discrete b (float or lattice): in exact arithmetic theta
determines b = -(n grad L(theta) + Delta theta) for a hypothesised D, and whether that lies on the
grid could tell D from D'. What stands in the way is the precision of theta (a float, itself
rounded; recovering b from it in float64 is accurate to 1e-13 .. 1e-7 on the test data, far coarser
than the 2^-56 sigma lattice), which is an engineering margin, not a proof:
``privacy_["finite_precision"]`` says so. (Snapping theta to a grid with a random offset gives a
proof with a small extra delta, but the weak curvature Delta / n makes theta too sensitive to b for
a grid fine enough to keep the accuracy.)
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from marginals.exact import discrete_gaussian, noise_variance
from marginals.randomness import NoiseSource, RandomSource

from ..base import DPEstimator, LogisticClassifier
from ..encoding import Encoding, EncodingOptions
from ..inputs import DomainLike
from ..solvers import fit_logistic
from .common import encoded_rows


#: b's lattice step is the power of two at or below sigma * 2^-LATTICE_BITS (see the module docstring).
LATTICE_BITS = 56


def lattice_noise(rng: RandomSource, sigma: float, size: int) -> tuple[np.ndarray, float]:
    """(gamma Z, gamma): ``size`` exact discrete Gaussian draws of std sigma on the lattice gamma Z."""
    gamma = 2.0 ** math.floor(math.log2(sigma) - LATTICE_BITS)
    draws = discrete_gaussian(rng, noise_variance(sigma / gamma), size)
    return draws.astype(np.float64) * gamma, gamma


class ObjPert(DPEstimator, LogisticClassifier):
    """Differentially private logistic regression by objective perturbation.

    Args:
        epsilon, delta: the (epsilon, delta)-DP guarantee of one fit.
        target: a 2-level attribute (code 1 is the positive class).
        categorical, encoding, domain: as for `AdaSSP` (a public domain: the bound ||X|| comes from it).
        accountant: must be None (see the module docstring); kept so all baselines share the API.
        insecure_seed: None (default: noise from the OS's secure source), or for tests only an int
            seed / `marginals.InsecureRandom`, which warns and sets ``private_ = False``.

    Learned: ``coef_``, ``intercept_``, ``classes_``, ``regularization_`` (Delta), ``noise_std_`` (std
    of each entry of b), ``private_``, ``privacy_`` ({"epsilon", "delta", "mechanism", "private"}).
    """

    _guarantee = "(epsilon, delta)-DP from objective perturbation's own analysis"
    _released_attributes = {
        "regularization_": "Delta = ||X||^2 / (2 epsilon): from the public norm bound and the budget",
        "noise_std_": "the std of each entry of b: from the public norm bound and the budget",
    }

    def __init__(
        self, epsilon: float, delta: float, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, accountant: Any = None,
        insecure_seed: NoiseSource = None, domain: DomainLike = None,
    ) -> None:  # fmt: skip
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.accountant = accountant
        self.insecure_seed = insecure_seed
        self.domain = domain

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        """Fit on the private rows in memory (a `Dataset`)."""
        X, y = encoded_rows("ObjPert", source, encoding)
        rng = self._noise()
        x_bound, _ = encoding.norm_bounds()
        n, p = X.shape
        epsilon, delta = float(self.epsilon), float(self.delta)
        self.regularization_ = x_bound**2 / (2.0 * epsilon)
        self.noise_std_ = x_bound * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * epsilon) / epsilon
        b, _ = lattice_noise(rng, self.noise_std_, p)
        self._record_privacy("objective perturbation (KST12)", finite_precision=(
            "KST12's proof is for real-valued noise; b is exact discrete Gaussian on a lattice of step <= sigma 2^-56 "
            "(an exactly known law, no float-noise artifacts; not a finite-precision proof: see ddssp.baselines.objpert)"))  # fmt: skip
        self._set_solution(fit_logistic(X, y, l2=self.regularization_ / n, linear=b / n), encoding)

"""PMT estimators on encoded tables: `PMTLinearRegression` (DP-PMT ridge) and
`PMTLogisticRegression` (DP-PMT logistic), each with ``moment_transform=False`` for the paper's
private-only baseline (DP-RR / DP-LR). The algorithms are in `ddssp.baselines.pmt`.

The public second moment Sigma_B = E[x x^T] of the encoded features (and, for ridge, E[y^2]) is
``public_moment``, one of:

- a public `Dataset` (or a DataFrame of codes; public rows never charged to the budget): exact;
- a release (any object with ``.domain`` and ``.marginals``, e.g. an AIM `Release`): Z^T Z / n
  from its marginals, as DD-SSP computes it (`ddssp.statistics`). Post-processing of a DP
  output: no budget beyond the release's own;
- ``"uniform"``: the moment of independent uniform attributes, from the public domain alone;
- an array: the (p+1) x (p+1) second moment of Z = [X, y] (or p x p for logistic).

Whether the public moment fits the private rows is read off the fit's own release (post-processing,
no extra budget): with a matching Sigma_B the whitened Gram A^T A / n (ridge: released; logistic: 4 x
the first Newton Hessian, released at 0) is near the identity. When its top eigenvalue, less its
noise, exceeds `pmt.MOMENT_FAR` (10: some direction of the rows has over 10 times the public second
moment, so rows are scaled up, clipped and swamped), the fit warns `PublicMomentWarning` and records
the value in ``moment_mismatch_``. ``"uniform"`` on adult at epsilon = 1 does (its common levels are
far more common than uniform); at small epsilon the noise can hide the mismatch (no warning then).

``moment_ridge`` is added to the diagonal of Sigma_B: one-hot levels absent from the public
source would otherwise make it singular (a small, documented departure from exact invariance).

A fitted PMT estimator holds only released quantities (``_released_attributes``): the noise
scales and radii depend on n, which the replace-one guarantee treats as public; the exact number
of clipped rows is private and is never stored.

Accounting: the budget (epsilon, delta) is converted to zCDP, rho = `cdp_rho` (neighbours differ
in one row, n public, as in the paper), mu = sqrt(2 rho), and every release is exact lattice
discrete Gaussian noise calibrated to its replace-one sensitivity, the sum of its add and remove
sensitivities (see `ddssp.baselines.pmt`: the paper's mu-GDP conversion holds for continuous noise only). Recorded in
``privacy_`` with the same keys as the other baselines plus ``mu`` and ``public_moment``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd

from marginals import Domain, cdp_rho
from marginals.randomness import NoiseSource
from marginals.source import MarginalSource, as_marginal_source, implements, is_rows

from ..base import DPEstimator, LinearRegressor, LogisticClassifier
from ..encoding import Encoding, EncodingOptions
from ..inputs import DomainLike
from ..statistics import sufficient_statistics
from .common import encoded_rows
from .pmt import MOMENT_FAR, dp_logistic, dp_ridge, pmt_logistic, pmt_ridge, private_only_radii


class PublicMomentWarning(UserWarning):
    """The public second moment is far from the private rows' (as the fit's own noisy release shows)."""


class _UniformSource:
    """Marginals of independent uniform attributes over a domain (total 1): public by construction."""

    def __init__(self, domain: Domain) -> None:
        self.domain = domain
        self.total = 1.0

    def marginals(self, cliques: Sequence[Sequence[str]]) -> list[np.ndarray]:
        out = []
        for clique in cliques:
            table = np.ones(tuple(self.domain[a] for a in clique))
            out.append(table / table.size)
        return out


def _matrix_moment(source: Any, p: int) -> tuple[np.ndarray, float, str]:
    matrix = np.asarray(source, dtype=np.float64)
    if matrix.shape not in ((p + 1, p + 1), (p, p)) or not np.all(np.isfinite(matrix)):
        raise ValueError(f"public_moment: expected a finite ({p + 1}, {p + 1}) matrix (Z = [X, y]) or ({p}, {p}), "
                         f"got shape {matrix.shape}")  # fmt: skip
    if not np.allclose(matrix, matrix.T):
        raise ValueError("public_moment: the matrix must be symmetric")
    y_moment = float(matrix[p, p]) if matrix.shape[0] == p + 1 else math.nan
    return matrix[:p, :p].copy(), y_moment, "matrix"


def public_moments(source: Any, encoding: Encoding, domain: Domain) -> tuple[np.ndarray, float, str]:
    """(Sigma_B = E[x x^T], E[y^2] (nan if not available), a description of the source)."""
    if isinstance(source, str):
        if source != "uniform":
            raise ValueError(f"public_moment: the only named source is 'uniform', got {source!r}")
        stats, kind = sufficient_statistics(_UniformSource(encoding.domain), encoding), "uniform over the domain"
    elif isinstance(source, (np.ndarray, list, tuple)):
        return _matrix_moment(source, encoding.n_features)
    elif isinstance(source, pd.DataFrame) or is_rows(source):
        rows = as_marginal_source(source, domain)
        stats, kind = sufficient_statistics(rows, encoding), f"public rows (n = {rows.records})"
    elif implements(source, MarginalSource):
        stats, kind = sufficient_statistics(source, encoding), "DP release (post-processing)"
    else:
        raise TypeError(
            "public_moment must be a public Dataset/DataFrame, a release, 'uniform' or a matrix, "
            f"got {type(source).__name__}"
        )
    return stats.XtX / stats.n, stats.yty / stats.n, kind


class _PMTModel(DPEstimator):
    """Parameters, checks and the shared preparation of both PMT estimators."""

    _guarantee = ("mu^2/2-zCDP with exact lattice noise (replace-one neighbours, n public), mu = sqrt(2 cdp_rho(epsilon, "
                  "delta)), recorded in privacy_")  # fmt: skip
    _released_attributes = {
        "sigmas_": "the noise standard deviations: from the budget, the radii and n (public, replace-one)",
        "radius_": "the feature clipping radius sqrt(d L_n): from d, n (public) and eta",
        "y_radius_": "the response clipping radius (ridge; None for logistic): from n (public) and eta",
        "mu_release_": "mu of each Gaussian release: from the budget",
        "public_moment_source_": "a description of the public moment's source (public rows' n is public)",
        "moment_mismatch_": "the released whitened Gram's top eigenvalue less its noise: post-processing",
    }

    def __init__(
        self, epsilon: float, delta: float, target: str | None = None, categorical: Sequence[str] | None = None,
        encoding: EncodingOptions | None = None, public_moment: Any = None, moment_transform: bool = True,
        ridge: float = 0.0, eta: float = 0.05, moment_ridge: float = 1e-3, newton_steps: int = 5,
        accountant: Any = None, insecure_seed: NoiseSource = None,
        domain: DomainLike = None,
    ) -> None:  # fmt: skip
        self.epsilon = epsilon
        self.delta = delta
        self.target = target
        self.categorical = categorical
        self.encoding = encoding
        self.public_moment = public_moment
        self.moment_transform = moment_transform
        self.ridge = ridge
        self.eta = eta
        self.moment_ridge = moment_ridge
        self.newton_steps = newton_steps
        self.accountant = accountant
        self.insecure_seed = insecure_seed
        self.domain = domain

    def _check_params(self) -> None:
        super()._check_params()
        for name in ("ridge", "moment_ridge"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")
        if not (0 < self.eta < 1):
            raise ValueError(f"eta must lie in (0, 1), got {self.eta}")
        if self.public_moment is None:
            raise ValueError(
                "PMT needs a public second moment: public_moment= a public Dataset, a release, 'uniform' or a matrix"
            )

    def _prepare(self, source: Any, encoding: Encoding):
        X, y = encoded_rows(type(self).__name__, source, encoding)
        moment, y_moment, kind = public_moments(self.public_moment, encoding, source.domain)
        moment = moment + self.moment_ridge * np.eye(moment.shape[0])
        rho = cdp_rho(self.epsilon, self.delta)
        mu = math.sqrt(2.0 * rho)
        rng = self._noise()
        self._record_privacy(self._mechanism(), mu=mu, rho=rho, neighbours="replace one row (n public)", public_moment=kind)
        self.public_moment_source_ = kind
        return X, y, moment, y_moment, mu, rng

    def _mechanism(self) -> str:
        raise NotImplementedError

    def _record(self, result, encoding: Encoding) -> None:
        self.sigmas_ = result.sigmas
        self.radius_ = result.radius
        self.y_radius_ = result.y_radius
        self.mu_release_ = result.mu_release
        self.moment_mismatch_ = result.moment_mismatch
        self._set_solution(result.coef, encoding)
        if result.moment_mismatch is not None and result.moment_mismatch > MOMENT_FAR:
            hint = (" ('uniform' assumes independent uniform attributes, far from most real tables)"
                    if isinstance(self.public_moment, str) else "")  # fmt: skip
            warnings.warn(
                f"{type(self).__name__}: the public moment ({self.public_moment_source_}) is far from the private rows"
                f"{hint}: this fit's own release, the whitened Gram (about the identity when they agree), has a top "
                f"eigenvalue of {result.moment_mismatch:.3g} beyond its noise (over {MOMENT_FAR:g}); clipping and noise "
                "then dominate and the fit is poor. Use public rows or a DP release (public_moment=release) instead",
                PublicMomentWarning, stacklevel=4,
            )  # fmt: skip


class PMTLinearRegression(_PMTModel, LinearRegressor):
    """DP ridge regression through a public second moment (DP-PMTRR, Cao, Bi & Zhang Alg. 2).

    Args:
        epsilon, delta: the guarantee of one fit, spent as rho = cdp_rho(epsilon, delta) zCDP, mu = sqrt(2 rho).
        target, categorical, encoding, domain: as for `AdaSSP`.
        public_moment: where Sigma_B and E[y^2] come from (see the module docstring).
        moment_transform: True for DP-PMTRR; False for the private-only baseline DP-RR (clipping radii
            sqrt(Tr Sigma_B + p log(n/eta)) and sqrt(E y^2 + log(n/eta)) from the public moment).
        ridge: lambda in (A^T A / n + lambda I) (the paper keeps its meaning through the transform).
        eta: clipping failure probability (sets the radii; utility only).
        moment_ridge: added to the diagonal of Sigma_B.
        newton_steps: unused by ridge (kept so both PMT estimators share their parameters).
        accountant: must be None (mu-GDP; see the module docstring).
        insecure_seed: None (secure noise) or, for tests only, an int seed / `InsecureRandom`.

    Learned: ``coef_``, ``intercept_``, ``sigmas_`` (noise std of Gram and cross moment),
    ``radius_``, ``y_radius_``, ``mu_release_``, ``public_moment_source_``, ``moment_mismatch_`` (None for
    DP-RR), ``private_``, ``privacy_`` (never the exact number of clipped rows: a private count). Warns
    `PublicMomentWarning` when the public moment is far from the rows (module docstring).
    """

    def _mechanism(self) -> str:
        return "DP-PMT ridge (Cao, Bi & Zhang Alg. 2)" if self.moment_transform else "DP-RR (Cao, Bi & Zhang Thm 4.3)"

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        """Fit on the private rows in memory (a `Dataset`)."""
        X, y, moment, y_moment, mu, rng = self._prepare(source, encoding)
        if not (y_moment > 0 and math.isfinite(y_moment)):
            raise ValueError(f"the public moment gives E[y^2] = {y_moment}; ridge needs a (p+1) x (p+1) moment > 0")
        if self.moment_transform:
            result = pmt_ridge(X, y, moment, y_moment, mu, self.ridge, self.eta, rng)
        else:
            radius, y_radius = private_only_radii(float(np.trace(moment)), y_moment, len(X), X.shape[1], self.eta)
            result = dp_ridge(X, y, radius, y_radius, mu, self.ridge, rng)
        self._record(result, encoding)


class PMTLogisticRegression(_PMTModel, LogisticClassifier):
    """DP logistic regression by noisy Newton through a public second moment (DP-PMTLR, Alg. 3).

    Args: as `PMTLinearRegression`, with a 2-level target (code 1 positive) and
        ``newton_steps``: T, the exact number of noisy Newton steps from 0 (budget split evenly).
        ``moment_transform=False`` gives the private-only DP-LR (radius sqrt(Tr Sigma_B + p log(n/eta))).
        ``ridge``: lambda of the penalty (lambda/2)||theta||^2 on the mean log-loss.

    Learned: ``coef_``, ``intercept_``, ``classes_``, ``sigmas_`` (noise std of each Hessian and
    gradient), ``radius_``, ``y_radius_`` (None), ``mu_release_``, ``public_moment_source_``, ``private_``,
    ``privacy_``.
    """

    def _mechanism(self) -> str:
        if self.moment_transform:
            return "DP-PMT logistic, noisy Newton (Cao, Bi & Zhang Alg. 3)"
        return "DP-LR, noisy Newton (Cao, Bi & Zhang Alg. 5)"

    def _check_params(self) -> None:
        super()._check_params()
        if isinstance(self.newton_steps, bool) or not isinstance(self.newton_steps, (int, np.integer)):
            raise TypeError(f"newton_steps must be an int, got {self.newton_steps!r}")

    def _fit_encoded(self, source: Any, encoding: Encoding) -> None:
        """Fit on the private rows in memory (a `Dataset`)."""
        X, y, moment, _, mu, rng = self._prepare(source, encoding)
        y01 = (y > 0).astype(np.float64)  # the encoding's -1/+1 labels as 0/1
        steps = int(self.newton_steps)
        if self.moment_transform:
            result = pmt_logistic(X, y01, moment, mu, self.ridge, self.eta, steps, rng)
        else:
            radius, _ = private_only_radii(float(np.trace(moment)), 0.0, len(X), X.shape[1], self.eta)
            result = dp_logistic(X, y01, radius, mu, self.ridge, steps, rng)
        self._record(result, encoding)

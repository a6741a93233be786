"""Locally private Bayesian inference (Kulkarni, Jälkö, Kaski, Honkela): perturbed-input likelihoods.

- **OUE histograms** (optimal unary encoding): a user one-hot encodes its item k in d categories
  and reports the true bit as 1 with probability 1/2 and every other bit as 0 with probability
  p = e^eps / (1 + e^eps) (as 1 with q = 1 / (1 + e^eps)). With x ~ Cat(theta) marginalised out,
  Eq. 33: p(z | theta) = p^d e^{-eps sum_j z_j} sum_k theta_k e^{eps z_k} / (2p); on the simplex
  sum_k theta_k e^{eps z_k} = 1 + (e^eps - 1) theta.z. The unbiased point estimate (erratum: the
  printed (mean - q)/(p - q) mixes the letters) is f_k = (mean_k - q) / (1/2 - q).
- **Clipped Gaussian with Laplace noise** (Eq. 28, rectified density): x ~ N(mu, sigma^2) clamped
  to [a, b], then z = x + Laplace((b - a) / eps). The likelihood is two boundary atoms convolved
  with the Laplace density plus the Gaussian-Laplace convolution over [a, b], written here in log
  space (log_ndtr differences and logsumexp: the printed exp((eps sigma)^2 / (2 (b-a)^2)) times an
  erf difference overflows). Eq. 24 writes the CDF where the pdf is meant (erratum).
  Exact noise (`laplace_release`): the clipped value is snapped to the lattice a + gamma Z with
  gamma = (b - a) / 2^20, its integer coordinate F = rint((x - a) / gamma) clipped to [0, 2^20] (so
  any two users differ by at most 2^20 units: the rounding cannot add sensitivity), and F + Y is
  released with Y discrete Laplace, P(y) ~ exp(-|y| / t), t = ceil(2^20 / eps): (2^20 / t) <= eps
  LDP with no float noise (`marginals.lattice`). The likelihood above models it as clip(x) +
  Laplace((b - a) / eps): the lattice and the scale differ from that by at most 2^-20 relative.
- The sufficient-statistics LDP regression models are `release.local_ssp` + `posterior.NoiseAwareGLM`
  (aggregate noise N Sigma_*).

Likelihood functions take an array namespace ``xp`` (numpy or jax.numpy) so NUTS can use them.
Reports are drawn from a `RandomSource` (secure by default); posteriors need the ``bayes`` extra.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import log_ndtr as _np_log_ndtr
from scipy.special import logsumexp as _np_logsumexp

from marginals.exact import discrete_laplace
from marginals.maps import LaplaceMap
from marginals.randomness import RandomSource, noise_source

LDP_BITS = 20  # laplace_release's lattice: 2^20 steps across [a, b]


def _ops(xp: Any) -> tuple[Any, Any]:
    if xp is np:
        return _np_log_ndtr, _np_logsumexp
    import jax.scipy.special as jsp

    return jsp.log_ndtr, jsp.logsumexp


# -- OUE -------------------------------------------------------------------------------------------


def oue_keep_probability(epsilon: float) -> float:
    """p = e^eps / (1 + e^eps): the probability that a 0-bit is reported as 0."""
    return 1.0 / (1.0 + math.exp(-epsilon))


def oue_perturb(items: np.ndarray, d: int, epsilon: float, insecure_seed: int | RandomSource | None = None) -> np.ndarray:
    """(N, d) 0/1 OUE reports of the items (codes 0..d-1), each epsilon-LDP."""
    items = np.asarray(items)
    if items.ndim != 1 or items.size and (items.min() < 0 or items.max() >= d):
        raise ValueError(f"items must be a 1-D array of codes in 0..{d - 1}")
    rng = noise_source(insecure_seed, "insecure_seed")
    q = 1.0 - oue_keep_probability(epsilon)
    u = rng.random((items.size, d))
    reports = (u < q).astype(np.int8)
    rows = np.arange(items.size)
    reports[rows, items] = (u[rows, items] < 0.5).astype(np.int8)
    return reports


def oue_record_log_likelihood(theta: Any, reports: Any, epsilon: float, xp: Any = np) -> Any:
    """log p(z_i | theta) of every report (Eq. 33, theta on the simplex)."""
    d = reports.shape[-1]
    p = oue_keep_probability(epsilon)
    ones = reports.sum(axis=-1)
    mix = xp.log1p(math.expm1(epsilon) * (reports @ theta))
    return d * math.log(p) - epsilon * ones - math.log(2 * p) + mix


def oue_log_likelihood(theta: Any, reports: Any, epsilon: float, xp: Any = np) -> Any:
    """sum_i log p(z_i | theta)."""
    return oue_record_log_likelihood(theta, reports, epsilon, xp).sum()


def oue_estimate(reports: np.ndarray, epsilon: float) -> np.ndarray:
    """The unbiased frequency estimate f_k = (mean_k - q) / (1/2 - q), q = 1 / (e^eps + 1) (corrected)."""
    q = 1.0 / (math.exp(epsilon) + 1.0)
    return (np.asarray(reports, dtype=np.float64).mean(axis=0) - q) / (0.5 - q)


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean (L2) projection onto the probability simplex (the point-estimate baseline)."""
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def oue_posterior(
    reports: np.ndarray, epsilon: float, num_samples: int = 500, num_chains: int = 4, random_state: int = 0,
) -> tuple[np.ndarray, dict]:  # fmt: skip
    """Posterior draws (chains x draws, d) of theta ~ Dirichlet(1) given OUE reports, and split R-hat
    (``random_state``: the sampler's seed, post-processing)."""
    from .posterior import require_numpyro, run_nuts

    require_numpyro()
    import jax.numpy as jnp

    reports = np.asarray(reports, dtype=np.float64)
    patterns, counts = np.unique(reports, axis=0, return_counts=True)  # the likelihood only sees patterns

    def model(patterns: Any, counts: Any) -> None:
        import numpyro
        import numpyro.distributions as dist

        theta = numpyro.sample("theta", dist.Dirichlet(jnp.ones(patterns.shape[1])))
        numpyro.factor("oue", (counts * oue_record_log_likelihood(theta, patterns, epsilon, jnp)).sum())

    data = {"patterns": jnp.asarray(patterns), "counts": jnp.asarray(counts)}
    samples, rhat = run_nuts(model, data, num_samples, None, num_chains, random_state)
    return samples["theta"], rhat


# -- clipped Gaussian with Laplace noise -------------------------------------------------------------


def laplace_release(x: np.ndarray, a: float, b: float, epsilon: float, insecure_seed: int | RandomSource | None = None) -> np.ndarray:
    """clip(x, a, b) + exact discrete Laplace of scale about (b - a) / eps on a 2^-20 (b - a) lattice: epsilon-LDP."""
    rng = noise_source(insecure_seed, "insecure_seed")
    if not (b > a and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"laplace_release needs finite a < b, got [{a}, {b}]")
    x = np.clip(np.asarray(x, dtype=np.float64), a, b)
    gamma = (b - a) / 2**LDP_BITS
    units = np.clip(np.rint((x - a) / gamma), 0, 2**LDP_BITS).astype(np.int64)
    noise = discrete_laplace(rng, LaplaceMap(2**LDP_BITS).scale(epsilon), units.size).reshape(units.shape)
    return a + gamma * (units + noise).astype(np.float64)


def _log_ndtr_diff(u: Any, v: Any, xp: Any) -> Any:
    """log(Phi(u) - Phi(v)) for u >= v, stable in both tails (-inf when u == v; finite gradients)."""
    log_ndtr, _ = _ops(xp)
    flip = v > 0
    hi = xp.where(flip, -v, u)
    lo = xp.where(flip, -u, v)
    l_hi, l_lo = log_ndtr(hi), log_ndtr(lo)
    gap = xp.minimum(l_lo - l_hi, -1e-300)
    log1mexp = xp.where(gap > -0.6931, xp.log(-xp.expm1(xp.maximum(gap, -0.6931))), xp.log1p(-xp.exp(xp.minimum(gap, -0.6931))))
    return xp.where(u > v, l_hi + log1mexp, -xp.inf)  # an empty interval (z beyond a or b) has mass 0


def clipped_gaussian_laplace_logpdf(z: Any, mu: Any, sigma: Any, a: float, b: float, epsilon: float, xp: Any = np) -> Any:
    """log p(z | mu, sigma) of z = clip(x, a, b) + Laplace((b - a)/eps), x ~ N(mu, sigma^2) (Eq. 28)."""
    log_ndtr, logsumexp = _ops(xp)
    lam = (b - a) / epsilon
    log_kernel = -math.log(2 * lam)
    l = xp.clip(z, a, b)
    alpha, beta, ell = (a - mu) / sigma, (b - mu) / sigma, (l - mu) / sigma
    s = sigma / lam
    atom_a = log_ndtr(alpha) + log_kernel - xp.abs(z - a) / lam
    atom_b = log_ndtr(-beta) + log_kernel - xp.abs(z - b) / lam
    below = log_kernel + (mu - z) / lam + s**2 / 2 + _log_ndtr_diff(ell - s, alpha - s, xp)
    above = log_kernel + (z - mu) / lam + s**2 / 2 + _log_ndtr_diff(beta + s, ell + s, xp)
    return logsumexp(xp.stack([atom_a, atom_b, below, above]), axis=0)


def clipped_gaussian_posterior(
    z: np.ndarray, a: float, b: float, epsilon: float, num_samples: int = 500, num_chains: int = 4,
    random_state: int = 0, mean_prior: tuple[float, float] | None = None, sd_prior: tuple[float, float] = (2.0, 1.0),
) -> tuple[dict[str, np.ndarray], dict]:  # fmt: skip
    """Posterior draws of (mu, sigma) given Laplace-perturbed clipped values (paper's priors).

    mu ~ N(m0, s0) with (m0, s0) = ``mean_prior`` (default: the interval's midpoint and width);
    sigma ~ Gamma(shape, rate) with (shape, rate) = ``sd_prior``.
    """
    from .posterior import require_numpyro, run_nuts

    require_numpyro()
    import jax.numpy as jnp

    m0, s0 = mean_prior if mean_prior is not None else ((a + b) / 2, b - a)

    def model(z: Any) -> None:
        import numpyro
        import numpyro.distributions as dist

        mu = numpyro.sample("mu", dist.Normal(m0, s0))
        sigma = numpyro.sample("sigma", dist.Gamma(sd_prior[0], sd_prior[1]))
        numpyro.factor("ldp", clipped_gaussian_laplace_logpdf(z, mu, sigma, a, b, epsilon, jnp).sum())

    return run_nuts(model, {"z": jnp.asarray(np.asarray(z, dtype=np.float64))}, num_samples, None, num_chains, random_state)

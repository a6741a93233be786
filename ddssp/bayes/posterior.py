"""Noise-aware Bayesian GLM posterior from noisy sufficient statistics (NUTS; needs the ``bayes`` extra).

Model (Kulkarni et al. 2021, Eq. 3, after Bernstein & Sheldon 2018): x ~ N(0, Sigma), the GLM for y,
the CLT for the sum of the per-record statistics and Gaussian release noise, integrated out:

    z ~ N(N mu_s(theta, Sigma), N Sigma_s(theta, Sigma) + noise_cov)

with mu_s, Sigma_s from `moments` (linear exact; logistic cubic Taylor with the corrected sign).
``noise_cov`` is whatever the release says: sigma^2 I for central Gaussian SSP, N sigma^2 I for an
LDP sum (`release.local_ssp`), 0 for the non-private reference posterior.

Priors (Paper A, section 4.1, errata applied): Sigma = diag(tau) Omega diag(tau), Omega ~ LKJ(2),
tau ~ HalfNormal(2.5) (2.5 a standard deviation, tau must be positive); theta = sqrt(min(rho, s)) p/||p||
with p ~ N(0, I), rho ~ chi2(d) and the cap s = ``theta_cap`` (the paper prints max, which would
make s a lower bound; its s came from the non-private fit, ours is a public default 9, the
||theta|| < 3 range where the Taylor series is accurate). Linear: noise_sd ~ HalfNormal(``noise_sd``).

Inference: NUTS, ``num_chains`` = 4, warm-up = ``num_warmup`` (default: as many as samples, i.e. the
first 50% of each chain), split R-hat per coefficient; a `ConvergenceWarning` when any exceeds
``rhat_threshold`` (1.1). Sampling is post-processing: its seed (``random_state``) is a JAX key.
jax and numpyro are imported only when a posterior is fitted, so the core runs without them.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import numpy as np

from .moments import glm_moments, vech_pairs
from .nuts import TARGET_ACCEPT, compiled_chains, start_check
from .release import FAMILIES, NoisyStatistics

#: added to the diagonal of the likelihood covariance (relative to its mean diagonal).
JITTER = 1e-9
#: median of a standard half-normal (tau's and noise_sd's prior medians are this times their scale).
HALFNORMAL_MEDIAN = 0.6744897501960817
#: rho (= ||theta||^2) of the safe start: theta ~ 1e-3, where the Taylor covariance is positive definite.
SAFE_START_RHO = 1e-6


class ConvergenceWarning(UserWarning):
    """Some split R-hat exceeds the threshold: the chains have not mixed."""


def require_numpyro() -> tuple[Any, Any, Any]:
    """(jax, numpyro, numpyro.distributions), with a clear error when the extra is absent."""
    try:
        import jax
        import numpyro
        import numpyro.distributions as dist
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "posterior sampling needs numpyro and jax: pip install 'dp-marginals[bayes]'"
        ) from exc
    numpyro.enable_x64()
    return jax, numpyro, dist


#: compiled samplers reused across fits of the same model, settings and shapes (`nuts.compiled_chains`).
_SAMPLERS: dict = {}


def run_nuts(
    model: Callable[..., None],
    data: dict,
    num_samples: int = 1000,
    num_warmup: int | None = None,
    num_chains: int = 4,
    seed: int = 0,
    chain_method: str = "vectorized",
    cache_key: Any = None,
    init_params: dict | None = None,
    init_values: dict | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """NUTS samples grouped by chain ({site: (chains, draws, ...)}) and the split R-hat of every site.

    ``data`` holds the model's array arguments only (traced: with a ``cache_key``, the sampler
    compiled for that key, the settings and the array shapes is reused by later calls).
    ``init_params``: unconstrained starting values with a leading chain axis; ``init_values``:
    constrained values every chain starts from when ``init_params`` is None. With either, the
    chains run as one compiled function (`nuts.compiled_chains`); with neither (or chain_method
    "parallel"), numpyro's `MCMC` starts them from the prior medians.
    """
    jax, numpyro, _ = require_numpyro()
    from numpyro.diagnostics import split_gelman_rubin

    warmup = num_samples if num_warmup is None else num_warmup
    if (init_params is None and init_values is None) or chain_method not in ("vectorized", "sequential"):
        samples = _mcmc_samples(model, data, num_samples, warmup, num_chains, seed, chain_method, init_params, init_values)
    else:
        if init_params is None:  # every chain starts at init_values
            from numpyro.infer.util import unconstrain_fn

            start = unconstrain_fn(model, (), dict(data), dict(init_values))
            init_params = {k: jax.numpy.stack([v] * num_chains) for k, v in start.items()}
        key = (cache_key, warmup, num_samples, num_chains, chain_method)
        sampler = _SAMPLERS.get(key) if cache_key is not None else None
        if sampler is None:
            sampler = compiled_chains(model, warmup, num_samples, num_chains, chain_method)
            if cache_key is not None:
                _SAMPLERS[key] = sampler  # jax.jit itself recompiles for new array shapes
        draws = sampler(jax.random.PRNGKey(seed), init_params, dict(data))
        samples = {k: np.asarray(v) for k, v in draws.items()}
    rhat = {k: np.asarray(split_gelman_rubin(v)) for k, v in samples.items() if num_chains > 1}
    return samples, rhat


def _mcmc_samples(model: Callable[..., None], data: dict, num_samples: int, warmup: int, num_chains: int, seed: int,
                  chain_method: str, init_params: dict | None, init_values: dict | None) -> dict[str, np.ndarray]:
    """numpyro's `MCMC` (no caching: it recompiles on every run). numpyro evaluates its init
    strategy's point (``init_values``, else the prior medians) even when ``init_params`` is given
    and refuses to start when the density there is not finite."""
    import jax
    from numpyro.infer import MCMC, NUTS, init_to_median, init_to_value

    strategy = init_to_median() if init_values is None else init_to_value(values=init_values)
    mcmc = MCMC(NUTS(model, init_strategy=strategy, target_accept_prob=TARGET_ACCEPT, dense_mass=True),
                num_warmup=warmup, num_samples=num_samples, num_chains=num_chains, chain_method=chain_method,
                progress_bar=False)  # fmt: skip
    if init_params is not None and num_chains == 1:  # numpyro takes one chain's values without the chain axis
        init_params = {k: v[0] for k, v in init_params.items()}
    mcmc.run(jax.random.PRNGKey(seed), init_params=init_params, **data)
    return {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}


def glm_model(z: Any, noise_cov: Any, n: Any, d: int, family: str, theta_cap: float, scale_sd: float,
              lkj_eta: float, noise_sd: float, noise_aware: bool = True) -> None:  # fmt: skip
    """The numpyro model of the module docstring (observed site ``z``)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    tau = numpyro.sample("tau", dist.HalfNormal(scale_sd).expand([d]).to_event(1))
    if d > 1:
        L_omega = numpyro.sample("L_omega", dist.LKJCholesky(d, lkj_eta))
        L = tau[:, None] * L_omega
        Sigma = L @ L.T
    else:
        Sigma = (tau**2)[:, None]
    p = numpyro.sample("p", dist.Normal(0.0, 1.0).expand([d]).to_event(1))
    rho = numpyro.sample("rho", dist.Chi2(d))
    theta = numpyro.deterministic("theta", jnp.sqrt(jnp.minimum(rho, theta_cap)) * p / jnp.linalg.norm(p))
    if family == "linear":
        sd = numpyro.sample("noise_sd", dist.HalfNormal(noise_sd))
        mu, S = glm_moments("linear", theta, Sigma, sd**2, xp=jnp)
    else:
        mu, S = glm_moments("logistic", theta, Sigma, xp=jnp)
    cov = n * S + (noise_cov if noise_aware else 0.0)
    cov = cov + JITTER * (jnp.trace(cov) / cov.shape[0] + 1.0) * jnp.eye(cov.shape[0])
    # a non-positive-definite covariance (Taylor moments far outside their range) gives NaN: NUTS rejects it
    scale_tril = jnp.linalg.cholesky(cov)
    numpyro.sample("z", dist.MultivariateNormal(n * mu, scale_tril=scale_tril, validate_args=False), obs=z)


def safe_start(d: int, family: str, scale_sd: float, noise_sd: float) -> dict[str, np.ndarray]:
    """A data-independent point of finite density for `glm_model`: prior-median scales, Omega = I, theta ~ 0.

    At theta = 0 the logistic moments are exact (E[y x] = 0, Cov = blockdiag(Sigma, Cov(t2(x)))), so the
    likelihood covariance is positive definite for every Sigma; the prior medians are not safe (their
    ||theta|| ~ sqrt(median chi2(d)) can lie where the cubic Taylor covariance is indefinite).
    """
    values = {
        "tau": np.full(d, HALFNORMAL_MEDIAN * scale_sd),
        "p": np.ones(d),
        "rho": np.asarray(SAFE_START_RHO),
    }
    if d > 1:
        values["L_omega"] = np.eye(d)
    if family == "linear":
        values["noise_sd"] = np.asarray(HALFNORMAL_MEDIAN * noise_sd)
    return values


class NoiseAwareGLM:
    """Posterior over GLM coefficients from `NoisyStatistics` (linear or logistic), by NUTS.

    Example (needs the ``bayes`` extra; labels {0, 1} or {-1, +1}):
        stats = gaussian_ssp(X, y, "logistic", epsilon=1.0, delta=1e-6, accountant=acct)
        post = NoiseAwareGLM(num_samples=500).fit(stats); post.predict_proba(X_new)

    Args:
        fit_intercept: fit an intercept (True, default); the release must carry the intercept column
            (``gaussian_ssp(..., fit_intercept=True)``, the default there too), or ValueError.
        num_samples / num_warmup / num_chains: NUTS draws per chain, warm-up (None: = num_samples,
            50% of each chain), chains (4; with 1 there is no R-hat: ``rhat_`` is NaN and no convergence check).
        theta_cap, scale_sd, lkj_eta, noise_sd: the priors of the module docstring.
        noise_aware: False drops noise_cov from the likelihood (the naive plug-in comparator).
        rhat_threshold: warn (`ConvergenceWarning`) above it.
        chain_method: "sequential" (default: on CPU it compiles in a third of the time of "vectorized",
            which steps every chain through the deepest tree of any), "vectorized" or "parallel" (numpyro's MCMC).
        random_state: int seed of the sampler (post-processing).

    Learned: ``coef_`` / ``intercept_`` (posterior means), ``coef_samples_`` (draws x features, chains
    stacked) / ``intercept_samples_``, ``samples_`` (every site, by chain; theta's first entry is the
    intercept column's), ``rhat_`` (split R-hat of theta), ``converged_``, ``coef_interval_`` (central
    90% credible intervals of coef_), ``n_features_in_``, ``classes_`` (logistic: the label coding).
    Predictions (scikit-learn conventions): ``predict_proba`` is the posterior predictive
    P(y = 1 | x) = mean over draws of sigmoid(x.coef + intercept); ``predict`` is its most likely
    class (logistic) or the posterior-mean x.coef_ + intercept_ (linear); ``score`` is accuracy or
    R^2. X is on the released rows' scale (the clipping radius R; rows are not clipped here).
    """

    #: all post-processing of the released `NoisyStatistics` (the only data ``fit`` sees)
    _released_attributes = {
        "samples_": "the posterior draws of every site: post-processing of the released statistics",
        "coef_samples_": "theta's draws: as samples_",
        "coef_": "the posterior mean of theta: as samples_",
        "rhat_": "split R-hat of theta: a diagnostic of the draws",
        "converged_": "whether R-hat is below rhat_threshold: as rhat_",
        "coef_interval_": "central 90% credible intervals: as samples_",
        "n_features_in_": "d, the released statistics' dimension: public",
        "intercept_samples_": "the intercept's draws: as samples_",
        "intercept_": "the posterior mean of the intercept: as samples_",
        "classes_": "the label coding the release was given ((0, 1) or (-1, 1)): public",
    }

    def __init__(
        self,
        num_samples: int = 1000,
        num_warmup: int | None = None,
        num_chains: int = 4,
        theta_cap: float = 9.0,
        scale_sd: float = 2.5,
        lkj_eta: float = 2.0,
        noise_sd: float = 1.0,
        noise_aware: bool = True,
        rhat_threshold: float = 1.1,
        chain_method: str = "sequential",
        random_state: int = 0,
        fit_intercept: bool = True,
    ) -> None:
        self.num_samples = num_samples
        self.num_warmup = num_warmup
        self.num_chains = num_chains
        self.theta_cap = theta_cap
        self.scale_sd = scale_sd
        self.lkj_eta = lkj_eta
        self.noise_sd = noise_sd
        self.noise_aware = noise_aware
        self.rhat_threshold = rhat_threshold
        self.chain_method = chain_method
        self.random_state = random_state
        self.fit_intercept = fit_intercept

    def get_params(self, deep: bool = True) -> dict:
        """The hyperparameters given to ``__init__``."""
        return {k: getattr(self, k) for k in (
            "num_samples", "num_warmup", "num_chains", "theta_cap", "scale_sd", "lkj_eta", "noise_sd",
            "noise_aware", "rhat_threshold", "chain_method", "random_state", "fit_intercept")}  # fmt: skip

    def fit(self, stats: NoisyStatistics) -> "NoiseAwareGLM":
        """Sample the posterior given released statistics."""
        if not isinstance(stats, NoisyStatistics):
            raise TypeError(f"fit needs ddssp.bayes.NoisyStatistics, got {type(stats).__name__}")
        if stats.family not in FAMILIES:
            raise ValueError(f"unknown family {stats.family!r}")
        if bool(self.fit_intercept) != (stats.intercept > 0):
            raise ValueError(
                f"fit_intercept={self.fit_intercept} but the statistics were released with"
                f"{'' if stats.intercept > 0 else 'out'} an intercept column: pass fit_intercept="
                f"{self.fit_intercept} to gaussian_ssp / local_ssp / exact_statistics too"
            )
        require_numpyro()
        import jax.numpy as jnp

        static = {
            "d": stats.d, "family": stats.family, "theta_cap": float(self.theta_cap), "scale_sd": float(self.scale_sd),
            "lkj_eta": float(self.lkj_eta), "noise_sd": float(self.noise_sd), "noise_aware": bool(self.noise_aware),
        }  # fmt: skip
        data = {"z": jnp.asarray(stats.z), "noise_cov": jnp.asarray(stats.noise_cov), "n": jnp.asarray(float(stats.n))}
        model, cache_key = functools.partial(glm_model, **static), ("glm", tuple(sorted(static.items())))
        self.samples_, rhat = run_nuts(
            model, data, self.num_samples, self.num_warmup, self.num_chains, self.random_state, self.chain_method,
            cache_key=cache_key, init_params=self._init_params(model, data, stats, cache_key),
            init_values={k: jnp.asarray(v) for k, v in safe_start(stats.d, stats.family, self.scale_sd, self.noise_sd).items()},
        )
        theta = self.samples_["theta"].reshape(-1, stats.d)
        k = int(stats.intercept > 0)
        self.intercept_samples_ = theta[:, 0] * stats.intercept if k else np.zeros(theta.shape[0])
        self.intercept_ = float(self.intercept_samples_.mean())
        self.coef_samples_ = theta[:, k:]
        self.coef_ = self.coef_samples_.mean(axis=0)
        self.__dict__.pop("classes_", None)
        if stats.family == "logistic":
            self.classes_ = np.asarray(stats.classes if stats.classes is not None else (-1.0, 1.0))
        self.rhat_ = rhat.get("theta", np.full(stats.d, np.nan))
        self.converged_ = bool(np.all(self.rhat_ < self.rhat_threshold)) if self.num_chains > 1 else True
        if not self.converged_:
            warnings.warn(
                f"NUTS did not converge: split R-hat of theta up to {np.nanmax(self.rhat_):.3f} "
                f"(threshold {self.rhat_threshold}); draw more samples",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.n_features_in_ = stats.n_features
        self.coef_interval_ = self.conf_int(0.1)
        return self

    def _init_params(self, model: Callable[..., None], data: dict, stats: NoisyStatistics, cache_key: Any) -> dict:
        """Chains start near Sigma_hat = X^T X / N read off the noisy statistics (PSD-projected) and a
        small theta, each with its own jitter (None when no such start has a finite density)."""
        import jax.numpy as jnp

        check = _SAMPLERS.get(("start", cache_key))
        if check is None:
            check = _SAMPLERS[("start", cache_key)] = start_check(model)

        d = stats.d
        gram = np.zeros((d, d))
        if stats.family == "logistic":
            entries, pairs = stats.z[d:], vech_pairs(d)
        else:
            entries, pairs = stats.z, vech_pairs(d + 1)
        for (p, q), value in zip(pairs, entries):
            if p < d and q < d:
                gram[p, q] = gram[q, p] = value
        eigval, eigvec = np.linalg.eigh(gram / max(stats.n, 1))
        Sigma = (eigvec * np.maximum(eigval, 1e-4 * max(eigval.max(), 1e-6) + 1e-8)) @ eigvec.T
        tau = np.sqrt(np.diag(Sigma))
        rng = np.random.default_rng(self.random_state)
        chains = []
        for attempt in range(20 * self.num_chains):
            if len(chains) == self.num_chains:
                break
            values = {"tau": tau * np.exp(0.1 * rng.normal(size=d)), "p": rng.normal(size=d), "rho": 0.05 * d}
            if d > 1:
                values["L_omega"] = np.linalg.cholesky(Sigma / np.outer(tau, tau))
            if stats.family == "linear":
                values["noise_sd"] = 0.3 * self.noise_sd
            start, finite = check({k: jnp.asarray(v, dtype=jnp.float64) for k, v in values.items()}, dict(data))
            if bool(finite):
                chains.append(start)
        if len(chains) < self.num_chains:
            return None  # every chain then starts at the safe start (`safe_start`)
        return {k: jnp.stack([c[k] for c in chains]) for k in chains[0]}

    def conf_int(self, alpha: float = 0.1) -> np.ndarray:
        """(d, 2) central credible intervals of posterior mass 1 - alpha."""
        if not hasattr(self, "coef_samples_"):
            raise RuntimeError("this NoiseAwareGLM is not fitted yet: call fit first")
        return np.quantile(self.coef_samples_, [alpha / 2, 1 - alpha / 2], axis=0).T

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        """X @ coef_ + intercept_ (posterior-mean linear score)."""
        return self._features(X) @ self.coef_ + self.intercept_

    def _features(self, X: np.ndarray) -> np.ndarray:
        if not hasattr(self, "coef_samples_"):
            raise RuntimeError("this NoiseAwareGLM is not fitted yet: call fit first")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must be (n, {self.n_features_in_}), got {X.shape}")
        return X

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, 2) posterior predictive class probabilities (columns in ``classes_`` order); logistic only."""
        if not hasattr(self, "classes_"):
            raise AttributeError("predict_proba is for the logistic family")
        X = self._features(X)
        p1 = np.empty(X.shape[0])
        for start in range(0, X.shape[0], 2048):  # (rows x draws) blocks of bounded memory
            u = X[start : start + 2048] @ self.coef_samples_.T + self.intercept_samples_
            p1[start : start + 2048] = (0.5 * (1.0 + np.tanh(0.5 * u))).mean(axis=1)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Logistic: the class of higher posterior predictive probability; linear: the posterior-mean prediction."""
        if hasattr(self, "classes_"):
            return self.classes_[(self.predict_proba(X)[:, 1] > 0.5).astype(int)]
        return self.decision_function(X)

    def score(self, X: np.ndarray, y: np.ndarray) -> float:
        """Accuracy (logistic) or R^2 (linear) of ``predict`` on (X, y), as scikit-learn's estimators."""
        y = np.asarray(y, dtype=np.float64)
        pred = self.predict(X)
        if hasattr(self, "classes_"):
            return float(np.mean(pred == y))
        return float(1.0 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2))

"""Posterior uncertainty for DP regression (numpy/scipy core; NUTS needs the ``bayes`` extra).

- `sensitivity`: joint sensitivities of released statistics, the analytic Gaussian mechanism.
- `moments`: mean and covariance of the statistics under the Gaussian feature model (linear exact,
  logistic cubic Taylor with the corrected sign).
- `release`: the Gaussian SSP release (central) and the local-noise sum (LDP), charged to an Accountant.
- `posterior`: the noise-aware NUTS posterior (imports jax/numpyro lazily).
- `ldp`: OUE histograms and the clipped-Gaussian-with-Laplace likelihood.
- `intervals`: bootstrap intervals for DD-SSP coefficients from an AIM release.
"""

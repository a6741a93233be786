"""Posterior uncertainty for DP regression (numpy/scipy core; NUTS needs the ``bayes`` extra).

- `sensitivity`: joint sensitivities of released statistics, the analytic Gaussian mechanism.
- `moments`: mean and covariance of the statistics under the Gaussian feature model (linear exact,
  logistic cubic Taylor with the corrected sign).
- `release`: the Gaussian SSP release (central) and the local-noise sum (LDP), charged to an Accountant.
- `posterior`: the noise-aware NUTS posterior (imports jax/numpyro lazily).
- `ldp`: OUE histograms and the clipped-Gaussian-with-Laplace likelihood.
- `resampling`, `intervals`: bootstrap errors of DD-SSP coefficients on an AIM release (AIM rerun on
  rows drawn from the released model, or raw measurement noise) and the intervals made from them.
"""

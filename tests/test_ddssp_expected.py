"""DDSSPLogisticRegression(objective="expected"): the logistic fit that maximises the expected
log-likelihood under a released model, against brute force on small exact joint distributions."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from ddssp import DDSSPLogisticRegression
from ddssp.baselines.public import PublicLogisticRegression
from ddssp.encoding import build_encoding
from ddssp.expected import fit_soft_logistic, soft_labels, target_probabilities
from ddssp.target_levels import TargetClasses, condition_on_classes
from marginals import Dataset, Domain

DOM = Domain(("a", "b", "t", "c"), (3, 2, 2, 4))
CLIQUES = [("a", "t"), ("b", "c", "t"), ("a", "b")]
#: rows drawn in the Monte Carlo tests, and the error allowed there (relative to 1 + |theta|: rare levels
#: carry large coefficients estimated from few draws; measured errors are about a third of it).
SAMPLES = 200_000
MC_TOLERANCE = 0.03


def joint(model) -> tuple[pd.DataFrame, np.ndarray]:
    """Every cell of the model's domain and its probability (summed log-potentials, normalised)."""
    cells = pd.DataFrame(list(itertools.product(*(range(m) for m in model.domain.shape))), columns=model.domain.attrs)
    logp = np.zeros(len(cells))
    for clique, factor in model.potentials.items():
        logp += factor.values[tuple(cells[a].to_numpy() for a in clique)]
    p = np.exp(logp - logp.max())
    return cells, p / p.sum()


def brute_force_theta(X: np.ndarray, weight: np.ndarray, q: np.ndarray, l2: float = 0.0) -> np.ndarray:
    """The (penalised) expected-log-likelihood maximiser by a generic quasi-Newton solver on the dense matrix."""
    w = weight / weight.sum()

    def neg(theta):
        z = X @ theta
        value = w @ (np.logaddexp(0, -z) + (1 - q) * z) + 0.5 * l2 * theta @ theta
        return value, X.T @ (w * (1 / (1 + np.exp(-z)) - q)) + l2 * theta

    return minimize(neg, np.zeros(X.shape[1]), jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 10_000}).x


def test_conditional_of_the_target_equals_the_joint(random_model):
    model = random_model(DOM, CLIQUES, 3)
    cells, p = joint(model)
    probs = target_probabilities(model, "t", cells)
    for (a, b, c), group in cells.groupby(["a", "b", "c"]):
        rows = group.index.to_numpy()
        expected = p[rows] / p[rows].sum()  # ordered by t = 0, 1
        assert np.allclose(probs[rows[0]], expected, atol=1e-12)


def test_class_conditioned_soft_labels(random_model):
    dom = Domain(("a", "t"), (3, 4))
    model = random_model(dom, [("a", "t")], 5)
    cells, p = joint(model)
    rows = cells[cells["t"] == 0].reset_index(drop=True)
    classes = TargetClasses("t", (1, 3), ("x", "y"), 4)
    weight, q = soft_labels(model, "t", rows, classes)
    table = p.reshape(3, 4) / p.reshape(3, 4).sum(axis=1, keepdims=True)
    assert np.allclose(weight, table[:, 1] + table[:, 3]) and np.allclose(q, table[:, 3] / (table[:, 1] + table[:, 3]))


@pytest.mark.parametrize("categorical,intercept,l2", [(["a", "c"], False, 0.0), (["a", "b", "c"], True, 0.0),
                                                      ([], True, 0.0), (["a", "c"], False, 0.05)])
def test_newton_in_marginal_space_equals_brute_force(random_model, categorical, intercept, l2):
    from ddssp.encoding import EncodingOptions

    model = random_model(DOM, CLIQUES, 11, scale=1.5)
    cells, p = joint(model)
    enc = build_encoding(DOM, "t", "logistic", categorical, EncodingOptions(intercept=intercept))
    weight, q = soft_labels(model, "t", cells, None)
    theta = fit_soft_logistic(Dataset(cells, DOM), enc, weight * p, q, l2)  # exact: every cell, weighted by P(cell)
    assert np.allclose(theta, brute_force_theta(enc.encode_features(cells), weight * p, q, l2), atol=1e-6)


@pytest.mark.filterwarnings("ignore::ddssp.InferredPairsWarning")
def test_fit_on_a_model_converges_to_the_exact_optimum(random_model):
    model = random_model(DOM, CLIQUES, 7, scale=1.5)
    cells, p = joint(model)
    enc = build_encoding(DOM, "t", "logistic", ["a", "c"])
    exact = brute_force_theta(enc.encode_features(cells), p, soft_labels(model, "t", cells, None)[1])
    fit = DDSSPLogisticRegression("t", categorical=["a", "c"], objective="expected", n_samples=SAMPLES, random_state=0)
    fit.fit(model)
    assert np.all(np.abs(fit.coef_ - exact) < MC_TOLERANCE * (1 + np.abs(exact)))
    again = DDSSPLogisticRegression("t", categorical=["a", "c"], objective="expected", n_samples=SAMPLES,
                                    random_state=0).fit(model)  # fmt: skip
    assert np.array_equal(fit.coef_, again.coef_)
    chebyshev = DDSSPLogisticRegression("t", categorical=["a", "c"]).fit(model)
    ratio = chebyshev.coef_ / fit.coef_
    assert np.ptp(ratio) > 0.1  # not a rescaled least-squares fit


def test_dropped_attributes_are_marginalised(random_model):
    """Fitting on a view without ``b`` targets the logistic optimum of the (a, c, t) marginal distribution."""
    model = random_model(DOM, CLIQUES, 13, scale=1.5)
    cells, p = joint(model)
    small = cells.assign(p=p).groupby(["a", "c", "t"], as_index=False)["p"].sum()
    positive = small[small["t"] == 1].set_index(["a", "c"])["p"]
    mass = small.groupby(["a", "c"])["p"].sum()
    view_dom = Domain(("a", "t", "c"), (3, 2, 4))
    rows = mass.index.to_frame(index=False).assign(t=0)
    enc = build_encoding(view_dom, "t", "logistic", ["a", "c"])
    exact = brute_force_theta(enc.encode_features(rows), mass.to_numpy(), (positive / mass).to_numpy())

    class View:  # what aim.views.ReleaseView offers: the model and the narrower domain
        def __init__(self):
            self.model, self.domain, self.total = model, view_dom, model.total

        def marginals(self, cliques):
            return model.marginals(cliques)

        cliques = property(lambda self: model.cliques)

        def synthetic_data(self, n=None, rng=None):
            return model.synthetic_data(n, rng).drop(columns=["b"])

    fit = DDSSPLogisticRegression("t", categorical=["a", "c"], objective="expected", n_samples=SAMPLES,
                                  random_state=1).fit(View())  # fmt: skip
    assert np.all(np.abs(fit.coef_ - exact) < MC_TOLERANCE * (1 + np.abs(exact)))


def test_on_rows_it_is_the_maximum_likelihood(random_table):
    data = random_table(4, {"x": 3, "z": 4, "y": 2}, 800,
                        {"y": lambda c, rng: (c["x"] + rng.integers(0, 3, 800) > 2).astype(int)})  # fmt: skip
    fit = DDSSPLogisticRegression("y", categorical=["x"], objective="expected").fit(data)
    public = PublicLogisticRegression("y", ["x"]).fit(data)
    assert np.allclose(fit.coef_, public.coef_, atol=1e-6)
    assert not hasattr(fit, "statistics_") and not hasattr(fit, "cheb_coef_")


def test_class_conditioned_rows_equal_the_kept_rows(random_table):
    data = random_table(9, {"x": 3, "y": 3}, 600, {"y": lambda c, rng: (c["x"] + rng.integers(0, 2, 600)) % 3})
    classes = TargetClasses("y", (0, 2), ("no", "yes"), 3)
    kept = condition_on_classes(data, classes)
    fit = DDSSPLogisticRegression("y", categorical=["x"], objective="expected").fit(kept)
    assert np.allclose(fit.coef_, PublicLogisticRegression("y", ["x"]).fit(kept).coef_, atol=1e-6)


def test_bad_settings_are_refused(random_model):
    model = random_model(DOM, CLIQUES, 1)
    with pytest.raises(ValueError, match="objective"):
        DDSSPLogisticRegression("t", objective="taylor").fit(model)
    with pytest.raises(ValueError, match="n_samples"):
        DDSSPLogisticRegression("t", objective="expected", n_samples=0).fit(model)
    with pytest.raises(ValueError, match="interval"):
        DDSSPLogisticRegression("t", objective="expected", interval="mechanism").fit(model)

    class Marginals:  # marginals only: no model to draw from
        domain, total = DOM, 10.0

        def marginals(self, cliques):
            return model.marginals(cliques)

    with pytest.raises(TypeError, match="fitted model"):
        DDSSPLogisticRegression("t", objective="expected").fit(Marginals())


def test_alpha_is_checked_and_penalises_both_objectives(random_table):
    data = random_table(3, {"x": 3, "t": 2}, 300, {"t": lambda c, rng: (c["x"] + rng.integers(0, 2, 300) > 1).astype(int)})
    for objective in ("chebyshev", "expected"):
        plain = DDSSPLogisticRegression("t", categorical=["x"], objective=objective).fit(data)
        shrunk = DDSSPLogisticRegression("t", categorical=["x"], objective=objective, alpha=50.0).fit(data)
        assert np.linalg.norm(shrunk.coef_) < np.linalg.norm(plain.coef_)
        for bad in (-1.0, "large", float("nan"), True):
            with pytest.raises(ValueError, match="alpha"):
                DDSSPLogisticRegression("t", objective=objective, alpha=bad).fit(data)

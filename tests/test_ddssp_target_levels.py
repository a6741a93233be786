"""A logistic target with ``<other>`` / ``<missing>`` levels besides two classes (issue 24 follow-up):
fitted on the rows of the two classes, exactly (brute force against filtered rows and the model's joint)."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from aim import synthesize
from ddssp import AIMSynth, DDSSPLogisticRegression
from ddssp.baselines import ObjPert
from ddssp.cli import main
from ddssp.statistics import InferredPairsWarning
from ddssp.target_levels import ClassMarginals, ClassModel, TargetClasses, condition_on_classes, pseudo_codes, target_classes
from marginals import Dataset, Discretizer, Domain

pytestmark = [pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning"),
              pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning"),
              pytest.mark.filterwarnings("ignore::ddssp.statistics.InferredPairsWarning")]
FAST = {"rounds": 6, "max_iters": 10, "final_iters": 30}
CLASSES = TargetClasses("t", (0, 1), ("no", "yes"), 4)


def coded_table(n: int = 800) -> Dataset:
    """4 attributes; the target t has 4 levels (codes 2, 3 stand for <other>, <missing>)."""
    rng = np.random.default_rng(5)
    a, b, c = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 3, n)
    t = np.where(rng.random(n) < 0.8, (a + b + rng.integers(0, 2, n) > 2).astype(int), rng.integers(2, 4, n))
    return Dataset(pd.DataFrame({"a": a, "b": b, "t": t, "c": c}), Domain(("a", "b", "t", "c"), (3, 2, 4, 3)))


def kept(data: Dataset) -> Dataset:
    df = data.to_df()
    return Dataset(df[df["t"] < 2].reset_index(drop=True), Domain(("a", "b", "t", "c"), (3, 2, 2, 3)))


def raw_table(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    job = rng.choice(["clerk", "nurse", "teacher"], n)
    city = rng.choice(["Lyon", "Paris"], n)
    p = 0.2 + 0.5 * (job == "nurse") + 0.2 * (city == "Paris")
    t = np.where(rng.random(n) < p, "yes", "no").astype(object)
    t[rng.random(n) < 0.005] = "maybe"  # <other> (too rare to be released)
    t[rng.random(n) < 0.05] = None  # <missing>
    return pd.DataFrame({"job": job, "city": city, "size": rng.choice(["S", "L"], n), "t": t})


def spec(unseen: str, missing: str) -> Discretizer:
    cat = {"type": "categorical"}
    return Discretizer({"columns": {"job": {**cat, "categories": ["clerk", "nurse", "teacher"]},
                                    "city": {**cat, "categories": ["Lyon", "Paris"]},
                                    "size": {**cat, "categories": ["S", "L"]},
                                    "t": {**cat, "categories": ["no", "yes"], "unseen": unseen, "missing": missing}}})


@pytest.fixture(scope="module")
def release():
    return synthesize(raw_table(), 4.0, insecure_seed=3, **FAST)[0]


def test_the_rule_reads_the_trailing_pseudo_levels_of_the_public_spec():
    assert pseudo_codes(["no", "yes", "<other>", "<missing>"]) == (2, 3)
    assert pseudo_codes(["no", "yes", "<missing>"]) == (2,) and pseudo_codes(["<other>", "a", "b"]) == ()
    disc = spec("other", "level")
    classes = target_classes(disc, disc.domain, "t")
    assert classes == TargetClasses("t", (0, 1), ("no", "yes"), 4) and classes.conditioned
    assert target_classes(None, Domain(("t",), (2,)), "t") is None
    with pytest.raises(ValueError, match="exactly 2 levels .* gives it 4: recode"):
        target_classes(None, Domain(("t",), (4,)), "t")
    with pytest.raises(ValueError, match=r"needs exactly 2 classes, but its spec gives 3 regular level\(s\) \['clerk'"):
        target_classes(disc, disc.domain, "job")
    with pytest.raises(ValueError, match="needs exactly 2 classes"):
        DDSSPLogisticRegression(target="job", domain=disc).fit(raw_table().dropna())


def test_conditioned_marginals_equal_the_marginals_of_the_kept_rows():
    data = coded_table()
    wrapped, filtered = ClassMarginals(data, CLASSES), kept(data)
    assert wrapped.domain == filtered.domain and wrapped.total == filtered.total == len(filtered)
    cliques = [c for r in (1, 2, 3) for c in itertools.permutations(("a", "b", "t", "c"), r)]
    for got, want in zip(wrapped.marginals(cliques), filtered.marginals(cliques)):
        np.testing.assert_array_equal(got, want)
    assert isinstance(condition_on_classes(data, CLASSES), Dataset)
    np.testing.assert_array_equal(condition_on_classes(data, CLASSES).to_df(), filtered.to_df())
    weights = np.arange(len(data), dtype=float)
    weighted = condition_on_classes(Dataset(data.to_df(), data.domain, weights=weights), CLASSES)
    np.testing.assert_array_equal(weighted.weights, weights[data.column("t") < 2])


def test_ddssp_through_the_wrapper_equals_a_fit_on_the_kept_rows():
    data = coded_table()
    through = DDSSPLogisticRegression(target="t").fit(ClassMarginals(data, CLASSES))
    direct = DDSSPLogisticRegression(target="t").fit(kept(data))
    np.testing.assert_allclose(through.coef_, direct.coef_, rtol=1e-12, atol=1e-12)


def test_raw_rows_with_a_spec_fit_on_the_two_classes_as_a_closed_target_would():
    raw = raw_table()
    open_spec, closed_spec = spec("other", "level"), spec("error", "error")
    classes_rows = raw[raw["t"].isin(["no", "yes"])]
    for make in (lambda d: DDSSPLogisticRegression(target="t", domain=d),
                 lambda d: ObjPert(1.0, 1e-6, target="t", insecure_seed=0, domain=d)):
        fitted, closed = make(open_spec).fit(raw), make(closed_spec).fit(classes_rows)
        np.testing.assert_allclose(fitted.coef_, closed.coef_, rtol=1e-10, atol=1e-12)
        assert list(fitted.classes_) == ["no", "yes"] and fitted.target_classes_.conditioned
    X, y = raw.drop(columns="t"), raw["t"]
    model = DDSSPLogisticRegression(domain=open_spec).fit(X, y)
    assert set(model.predict(X)) <= {"no", "yes"}
    # a true <other>/<missing> value is never predicted: it counts as wrong, as in accuracy_score(y, predict(X))
    assert model.score(X, y) == pytest.approx(np.mean(model.predict(X) == y.to_numpy()))
    assert model.score(X, y) < model.score(X[y.notna() & (y != "maybe")], y[y.notna() & (y != "maybe")])


def test_release_marginals_given_the_classes_equal_the_models_joint_sliced(release):
    classes = target_classes(release.discretizer, release.domain, "t")
    assert classes.codes == (0, 1) and classes.levels == 4
    wrapped = condition_on_classes(release, classes)
    assert isinstance(wrapped, ClassModel) and wrapped.domain["t"] == 2
    attrs = release.domain.attrs
    joint = np.take(release.marginals([attrs])[0], [0, 1], axis=attrs.index("t"))
    cliques = [("job", "city"), ("city", "job"), ("t",), ("job",), ("size", "t"), ("t", "job", "size")]
    for clique, got in zip(cliques, wrapped.marginals(cliques)):
        summed = joint.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in clique))
        kept_order = [a for a in attrs if a in clique]
        want = np.transpose(summed, [kept_order.index(a) for a in clique])
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert wrapped.total == pytest.approx(joint.sum())
    assert all("t" in c for c in wrapped.cliques)


def test_estimators_fit_a_release_whose_target_has_pseudo_levels(release):
    raw = raw_table()
    X, y = raw.drop(columns="t"), raw["t"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = DDSSPLogisticRegression(target="t").fit(release)
    assert list(model.classes_) == ["no", "yes"] and model.encoding_.domain["t"] == 2
    # given t, a pair is measured only inside a clique holding t: (job, city) is not, though both pair with t
    assert release.cliques == (("size",), ("job", "t"), ("city", "t"))
    [message] = [str(w.message) for w in caught if issubclass(w.category, InferredPairsWarning)]
    assert message.startswith("4 of 6 attribute pairs") and "clique holding 't'" in message and "(job, city)" in message
    synth = AIMSynth(target="t", task="logistic", random_state=1).fit(release)
    drawn = release.synthetic_codes(rng=1)
    assert synth.n_synthetic_ == int(drawn["t"].isin([0, 1]).sum()) < len(drawn)
    for clf in (model, synth):
        assert set(clf.predict(X)) <= {"no", "yes"} and clf.predict_proba(X).shape == (len(X), 2)
        assert clf.score(X, y) > 0.5


def test_intervals_bootstrap_the_conditioned_fit(release):
    model = DDSSPLogisticRegression(target="t", interval="measurements", n_boot=5, random_state=0).fit(release)
    assert model.coef_interval_.shape == (len(model.coef_), 2)
    assert np.all(model.coef_interval_[:, 0] <= model.coef_) and np.all(model.coef_ <= model.coef_interval_[:, 1])
    mech = DDSSPLogisticRegression(target="t", interval="mechanism", n_boot=2, random_state=0,
                                   progress=False).fit(release)  # fmt: skip
    assert np.all(np.isfinite(mech.coef_interval_))


def test_cli_fit_and_predict_on_a_release_whose_target_has_pseudo_levels(release, tmp_path, capsys):
    path, coef, rows, out = tmp_path / "r.npz", tmp_path / "c.json", tmp_path / "rows.csv", tmp_path / "p.csv"
    release.save(path)
    assert main(["fit", "--release", str(path), "--target", "t", "--model", "logistic", "--json", str(coef)]) == 0
    printed = capsys.readouterr().out
    assert "classes: ['no', 'yes']" in printed and "left out of the fit" in printed
    assert json.loads(coef.read_text())["left_out_levels"] == ["<other>", "<missing>"]
    raw_table(50).drop(columns="t").to_csv(rows, index=False)
    assert main(["predict", "--release", str(path), "--coef", str(coef), "--data", str(rows), "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["prediction"]) <= {"no", "yes"}

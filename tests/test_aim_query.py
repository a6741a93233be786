"""`Release.query` (issue 28, item 4): a marginal with a standard error per cell. Measured sets against
the known noise (one measurement: sigma; two: their inverse-variance combination; a subset: the
marginalised variance; any set of measurements: the GLS covariance computed by brute force on the
full table), the inferred path's bootstrap, the table, readable values, the CLI, bad input and
(slow) the coverage of the true marginal over many seeded releases."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from aim import AIM, Release
from aim.query import BOUND_COLUMNS, VALUE_COLUMNS, bootstrap_marginals, query
from ddssp.cli import main
from marginals import Dataset, Discretizer, Domain
from marginals.datasets import demo_dataset
from marginals.measurement import Measurement
from marginals.privacy import Accountant
from pgm.estimation import estimate
from pgm.measured import component_precisions, gls_variance

pytestmark = pytest.mark.filterwarnings("ignore::aim.release.NotPrivateWarning")

DOMAIN = Domain.from_dict({"a": 2, "b": 3, "c": 4})


def noisy(domain: Domain, truth: np.ndarray, clique: tuple, sigma: float, rng: np.random.Generator) -> Measurement:
    """A Gaussian measurement of ``clique`` of the table ``truth`` (axes in domain order)."""
    table = truth.sum(axis=tuple(i for i, a in enumerate(domain.attrs) if a not in clique))
    table = np.transpose(table, [domain.canonical(clique).index(a) for a in clique])
    return Measurement(clique, table + rng.normal(0, sigma, table.shape), sigma)


def hand_release(specs: list[tuple[tuple, float]], seed: int = 0, domain: Domain = DOMAIN) -> tuple[Release, np.ndarray]:
    """(a release measuring each (clique, sigma) of ``specs`` once, the true full table)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(50, 400, domain.shape).astype(float)
    ms = [noisy(domain, truth, c, s, rng) for c, s in specs]
    model = estimate(domain, ms, iters=300)
    return Release(domain, ms, model, Accountant(1e6), private=False), truth


def brute_gls(domain: Domain, ms: list[Measurement], attrs: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(covariance of the GLS marginal over ``attrs``, its covariance with the GLS total) from the explicit design."""
    cells = domain.size()
    rows, weights = [], []
    for m in ms:
        for flat in range(m.noisy_counts.size):
            index = np.unravel_index(flat, m.noisy_counts.shape)
            row = np.ones(domain.shape, dtype=bool)
            for a, i in zip(m.clique, index):
                sl = [slice(None)] * len(domain)
                keep = np.zeros(domain[a], dtype=bool)
                keep[i] = True
                sl[domain.attrs.index(a)] = keep
                mask = np.zeros(domain.shape, dtype=bool)
                mask[tuple(sl)] = True
                row &= mask
            rows.append(row.ravel().astype(float))
            weights.append(1 / m.sigma**2)
    design = np.array(rows)
    precision = design.T @ (design * np.array(weights)[:, None])
    cov = np.linalg.pinv(precision)
    marg = np.array([(np.moveaxis(np.eye(cells).reshape(cells, *domain.shape), [1 + domain.attrs.index(a) for a in attrs],
                                  list(range(1, 1 + len(attrs)))).reshape(cells, *[domain[a] for a in attrs], -1)
                      .sum(axis=-1)).reshape(cells, -1)[:, j] for j in range(domain.size(attrs))])  # fmt: skip
    return marg @ cov @ marg.T, marg @ cov @ np.ones(cells)


def test_one_measurement_gives_sigma_per_cell():
    release, _ = hand_release([(("a", "b"), 7.0)])
    q = release.query(["a", "b"])
    assert np.allclose(q.se, 7.0) and set(q.se_from) == {"measured"}
    q = release.query(["b", "a"])  # the order of the attributes does not matter to the noise
    assert np.allclose(q.se, 7.0)


def test_two_measurements_combine_by_inverse_variance():
    release, _ = hand_release([(("a", "b"), 3.0), (("b", "a"), 4.0)])
    assert np.allclose(release.query(["a", "b"]).se, 1 / math.sqrt(1 / 9 + 1 / 16))  # 2.4


def test_a_subset_has_the_marginalised_variance():
    release, _ = hand_release([(("a", "b", "c"), 5.0)])
    assert np.allclose(release.query(["a", "c"]).se, 5.0 * math.sqrt(3))  # b has 3 levels
    assert np.allclose(release.query(["b"]).se, 5.0 * math.sqrt(8))
    # the total's variance (all 24 cells' noise) is |S| times a cell's covariance with the total
    variance, cov_total = gls_variance(release.measurements, DOMAIN, ["b"])
    assert variance == pytest.approx(25.0 * 8) and 3 * cov_total == pytest.approx(25.0 * 24)


@pytest.mark.parametrize("seed", range(3))
def test_gls_variance_equals_the_brute_force_generalised_least_squares(seed):
    rng = np.random.default_rng(seed)
    cliques = [("a",), ("b",), ("c",), ("a", "b"), ("b", "c"), ("a", "c"), ("c", "a", "b"), ("b", "a")]
    chosen = [cliques[i] for i in sorted(rng.choice(len(cliques), size=5, replace=False))] + [("a", "b", "c")]
    release, _ = hand_release([(c, float(rng.uniform(1, 10))) for c in chosen], seed=seed)
    for attrs in [("a",), ("c", "b"), ("a", "b"), ("b", "c", "a")]:
        cov, cov_total = brute_gls(DOMAIN, release.measurements, attrs)
        variance, total_cov = gls_variance(release.measurements, DOMAIN, attrs)
        assert np.allclose(np.diag(cov), variance, rtol=1e-8)  # every cell the same variance
        assert np.allclose(cov_total, total_cov, rtol=1e-8)
        # se_fraction is the delta method of count / total on the GLS covariance
        q = release.query(list(attrs))
        counts, total = q["count"].to_numpy(), q["count"].sum()
        f = counts / total
        frac_var = (np.diag(cov) - 2 * f * cov_total + f**2 * cov.sum()) / total**2
        assert np.allclose(q.se_fraction, np.sqrt(frac_var), rtol=1e-8)


def test_an_unmeasured_set_has_zero_precision_on_its_interaction():
    release, _ = hand_release([(("a", "b"), 2.0), (("c",), 2.0)])
    lam = component_precisions(release.measurements, DOMAIN, ["a", "c"])
    assert lam[frozenset({"a", "c"})] == 0 and lam[frozenset({"a"})] > 0
    with pytest.raises(ValueError, match="no measurement holds"):
        gls_variance(release.measurements, DOMAIN, ["a", "c"])


def test_measured_se_is_the_spread_of_a_converged_model_over_noise_draws():
    """The model's answer is the GLS estimate when the fit converges on dense cells: its spread over
    fresh noise matches the reported se."""
    domain = Domain.from_dict({"a": 2, "b": 3})
    truth = np.array([[900.0, 1200, 700], [1500, 800, 1100]])
    answers = []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        ms = [noisy(domain, truth, c, s, rng) for c, s in [(("a",), 10.0), (("b",), 10.0), (("a", "b"), 20.0)]]
        answers.append(estimate(domain, ms, iters=150, tol=1e-10).project(["a", "b"]).values.ravel())
    release = Release(domain, ms, estimate(domain, ms, iters=400), Accountant(1e6), private=False)
    se = release.query(["a", "b"]).se.to_numpy()
    assert np.allclose(np.std(answers, axis=0, ddof=1), se, rtol=0.2)
    assert se[0] < 20.0  # the 1-way measurements help


def test_table_columns_rows_and_bounds():
    release, _ = hand_release([(("a", "b"), 7.0), (("c",), 2.0)])
    q = release.query(["b", "a"], alpha=0.1)
    assert list(q.columns) == ["b", "a", *VALUE_COLUMNS, *BOUND_COLUMNS] and len(q) == 6
    assert list(zip(q.b, q.a)) == list(itertools.product(range(3), range(2)))  # C order over the given attributes
    assert np.allclose(q["count"].to_numpy(), release.marginal(["b", "a"]).ravel())
    assert q.fraction.sum() == pytest.approx(1.0)
    half = q.upper - q["count"]
    assert np.allclose(half, 1.6448536269514722 * q.se)
    assert (q.lower >= 0).all() and np.allclose(q.lower, np.maximum(q["count"] - half, 0))
    assert (q.lower_fraction <= q.fraction).all() and (q.fraction <= q.upper_fraction).all()
    assert list(release.query(["a"]).columns) == ["a", *VALUE_COLUMNS]  # no alpha: no bounds


@pytest.fixture(scope="module")
def small_aim():
    data = demo_dataset(3000, seed=2)
    data = Dataset(data.to_df()[["education", "married", "income", "hours"]], data.domain.project(
        ["education", "married", "income", "hours"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = AIM(1.0, insecure_seed=5, max_iters=30, final_iters=30, rounds=8).run(data)
    return release, data


def _unmeasured(release) -> list[str]:
    for pair in itertools.combinations(release.domain.attrs, 2):
        if not any(set(pair) <= set(m.clique) for m in release.measurements):
            return list(pair)
    raise AssertionError("every pair measured: the test needs an inferred one")


def test_inferred_se_is_finite_and_deterministic_given_random_state(small_aim):
    release, _ = small_aim
    pair = _unmeasured(release)
    first = release.query(pair, n_boot=5, random_state=11)
    again = release.query(pair, n_boot=5, random_state=11)
    other = release.query(pair, n_boot=5, random_state=12)
    assert set(first.se_from) == {"inferred"}
    assert np.isfinite(first.se).all() and (first.se > 0).all() and np.isfinite(first.se_fraction).all()
    pd.testing.assert_frame_equal(first, again)
    assert not np.allclose(first.se, other.se)


def test_bootstrap_on_a_measured_set_approaches_the_exact_se():
    """A control for the bootstrap: on a dense measured pair its spread is the measurement noise's."""
    release, _ = hand_release([(("a",), 5.0), (("b",), 5.0), (("a", "b"), 10.0)])
    (tables, totals), = bootstrap_marginals(release, [("a", "b")], n_boot=40, random_state=0, iters=150)
    exact = release.query(["a", "b"]).se.iloc[0]
    assert tables.shape == (40, 2, 3) and totals.shape == (40,)
    assert np.median(tables.std(axis=0, ddof=1)) == pytest.approx(exact, rel=0.25)


SPEC = {"columns": {"age": {"type": "numeric", "edges": [0, 30, 60, 99], "integer": True},
                    "job": {"type": "categorical", "categories": ["=clerk", "nurse"]}}}


def test_readable_values_with_a_spec():
    disc = Discretizer(SPEC)
    release, _ = hand_release([(tuple(disc.domain.attrs), 3.0)], domain=disc.domain)
    release = release.with_spec(disc)
    q = release.query(["job", "age"])
    assert list(q.job.cat.categories) == disc.labels("job") and q.job.iloc[0] == disc.labels("job")[0]
    assert list(q.age.unique()) == disc.labels("age")
    codes = Release(release.domain, release.measurements, release.model, release.ledger, private=False).query(["job"])
    assert codes.job.dtype.kind == "i"


def test_bad_input_names_the_argument():
    release, _ = hand_release([(("a", "b"), 7.0)])
    with pytest.raises(ValueError, match="attrs.*unknown attribute"):
        release.query(["a", "zz"])
    with pytest.raises(ValueError, match="attrs.*repeated"):
        release.query(["a", "a"])
    with pytest.raises(ValueError, match="attrs must name at least one"):
        release.query([])
    with pytest.raises(TypeError, match="attrs must be a list"):
        release.query("a")
    with pytest.raises(ValueError, match="alpha"):
        release.query(["a"], alpha=1.5)
    with pytest.raises(ValueError, match="n_boot"):
        query(release, ["a", "c"], n_boot=1)


def test_cli_query_end_to_end(tmp_path, small_aim, capsys):
    release, _ = small_aim
    path = tmp_path / "r.npz"
    release.save(path)
    out = tmp_path / "q.csv"
    measured = list(release.measurements[-1].clique)
    assert main(["query", "--release", str(path), "--attrs", ",".join(measured), "--out", str(out),
                 "--alpha", "0.1", "--quiet"]) == 0
    table = pd.read_csv(out)
    expected = release.query(measured, alpha=0.1)
    assert list(table.columns) == list(expected.columns) and len(table) == len(expected)
    assert np.allclose(table.se, expected.se) and np.allclose(table["count"], expected["count"])
    inferred = _unmeasured(release)
    assert main(["query", "--release", str(path), "--attrs", ",".join(inferred), "--out", str(out), "--n-boot", "3",
                 "--seed", "4", "--quiet"]) == 0
    loaded = Release.load(path)  # the file's model is what the command line refits from
    assert np.allclose(pd.read_csv(out).se, loaded.query(inferred, n_boot=3, random_state=4).se)
    capsys.readouterr()
    assert main(["query", "--release", str(path), "--attrs", "nope", "--out", str(out)]) == 2
    assert "unknown attribute" in capsys.readouterr().err
    assert main(["query", "--release", str(path), "--attrs", ",", "--out", str(out)]) == 2
    assert main(["query", "--release", str(path), "--attrs", "income,income", "--out", str(out)]) == 2
    assert main(["query", "--release", str(path), "--attrs", "income", "--out", str(path)]) == 2  # overwrites input


@pytest.mark.slow
def test_measured_cells_cover_the_true_marginal_near_nominal():
    """Many seeded small AIM releases: count +- 1.645 se covers the private rows' count about 90% of
    the time on measured pairs; a control with half the se covers far less."""
    data = demo_dataset(20000, seed=3)
    attrs = ["education", "married", "income"]
    data = Dataset(data.to_df()[attrs], data.domain.project(attrs))
    z = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(40):
            release = AIM(1.0, insecure_seed=100 + seed, exact_noise=False).run(data)
            for pair in sorted({m.clique for m in release.measurements if len(m.clique) == 2}):
                q = release.query(list(pair))
                z.append((q["count"].to_numpy() - data.marginal(pair).ravel()) / q.se.to_numpy())
    z = np.concatenate(z)
    assert z.size > 500
    coverage = np.mean(np.abs(z) <= 1.6448536269514722)
    assert 0.85 <= coverage <= 0.95, coverage
    assert np.mean(np.abs(z) <= 1.6448536269514722 / 2) < 0.7  # the control: too narrow bars are caught


def test_structural_zeros_have_no_error_bar():
    """A cell a public rule forbids is 0 in the model and in the truth: its se is 0, the others keep theirs."""
    from types import SimpleNamespace

    allowed = np.ones((2, 3), dtype=bool)
    allowed[1, 2] = False
    rng = np.random.default_rng(0)
    truth = rng.integers(50, 400, DOMAIN.shape).astype(float)
    truth[1, 2, :] = 0
    ms = [noisy(DOMAIN, truth, c, 4.0, rng) for c in [("a", "b"), ("c",)]]
    model = estimate(DOMAIN, ms, iters=200, zeros=[SimpleNamespace(attrs=("a", "b"), allowed=allowed)])
    release = Release(DOMAIN, ms, model, Accountant(1e6), private=False)
    q = release.query(["a", "b"], alpha=0.1)
    hit = (q.a == 1) & (q.b == 2)
    assert q.loc[hit, "count"].item() == 0 and q.loc[hit, "se"].item() == 0 and q.loc[hit, "upper"].item() == 0
    assert np.allclose(q.loc[~hit, "se"], math.sqrt(gls_variance(ms, DOMAIN, ["a", "b"])[0]))
    assert (q.loc[~hit, "se"] > 3).all()


def test_query_on_a_person_level_release_with_rules():
    """Issue 28's other features on one release: the rule's forbidden cell has count and se 0, the
    measured noise is the recorded (unit-scaled) sigma, the values are the spec's labels."""
    from aim import synthesize

    spec = {"columns": {"relationship": {"type": "categorical", "categories": ["Husband", "Wife", "Other"]},
                        "sex": {"type": "categorical", "categories": ["Female", "Male"]}},
            "rules": [{"forbid": {"relationship": "Husband", "sex": "Female"}, "name": "a husband is male"}]}
    rng = np.random.default_rng(0)
    rel = rng.choice(["Husband", "Wife", "Other"], 2000)
    sex = np.where(rel == "Husband", "Male", np.where(rel == "Wife", "Female", rng.choice(["Female", "Male"], 2000)))
    df = pd.DataFrame({"person_id": np.arange(2000) // 2, "relationship": rel, "sex": sex})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release, _ = synthesize(df, 2.0, spec=spec, unit="person_id", max_rows_per_unit=2, insecure_seed=3, rows=10,
                                rounds=6, max_iters=10, final_iters=20)  # fmt: skip
    q = release.query(["relationship", "sex"], alpha=0.1)
    husband_f = (q.relationship == "Husband") & (q.sex == "Female")
    assert q.loc[husband_f, "count"].item() == 0 and q.loc[husband_f, "se"].item() == 0
    variance, _ = gls_variance(release.measurements, release.domain, ["relationship", "sex"])
    assert np.allclose(q.loc[~husband_f, "se"], math.sqrt(variance)) and set(q.se_from) == {"measured"}

"""The empirical DP audit (`benchmarks.dp_audit`): its statistics, and the small configuration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from benchmarks import dp_audit as audit
from benchmarks import dp_audit_baselines as baselines
from benchmarks import dp_audit_spec as spec_audit
from benchmarks import dp_audit_units as audit_units
from ddssp import ObjPert
from ddssp.baselines import adassp as adassp_module
from ddssp.baselines.objpert import lattice_noise
from ddssp.baselines.pmt import pmt_transform
from ddssp.baselines.pmt_models import PMTLinearRegression
from marginals.dataset import read_csv_file
from marginals.randomness import InsecureRandom


def test_clopper_pearson_upper_matches_beta_quantiles():
    level = 0.025
    assert audit.clopper_pearson_upper(0, 100, level) == pytest.approx(1 - level ** (1 / 100), rel=1e-12)
    assert audit.clopper_pearson_upper(100, 100, level) == 1.0
    for k, n in ((1, 10), (37, 1000), (999, 1000)):
        assert audit.clopper_pearson_upper(k, n, level) == pytest.approx(beta.ppf(1 - level, k + 1, n - k), rel=1e-12)
    ks = np.array([0, 5, 10])
    np.testing.assert_allclose(
        audit.clopper_pearson_upper(ks, 10, 0.05), [1 - 0.05 ** 0.1, beta.ppf(0.95, 6, 5), 1.0], rtol=1e-12
    )
    with pytest.raises(ValueError):
        audit.clopper_pearson_upper(11, 10, 0.05)
    # coverage: the one-sided bound misses p = 0.3 at most ~level of the time
    rng = np.random.default_rng(0)
    k = rng.binomial(50, 0.3, size=4000)
    assert np.mean(audit.clopper_pearson_upper(k, 50, 0.05) < 0.3) <= 0.05


def test_eps_lower_bound_known_values():
    fp, n0, fn, n1, delta = 10, 1000, 900, 1000, 1e-3
    fpr_u, fnr_u = beta.ppf(0.975, fp + 1, n0 - fp), beta.ppf(0.975, fn + 1, n1 - fn)
    expected = max(math.log((1 - delta - fnr_u) / fpr_u), math.log((1 - delta - fpr_u) / fnr_u))
    assert audit.eps_lower_bound(fp, n0, fn, n1, delta) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(1.4881, abs=1e-4)
    # the bound is symmetric in (FPR, FNR) for equal sample sizes; a 99% bound is lower
    assert audit.eps_lower_bound(fn, n0, fp, n1, delta) == pytest.approx(expected, rel=1e-12)
    assert audit.eps_lower_bound(fp, n0, fn, n1, delta, confidence=0.99) < expected
    # no evidence: identical rates give 0, never a negative bound; zero errors give log((1-delta-u)/u)
    assert audit.eps_lower_bound(500, 1000, 500, 1000, delta) == 0.0
    u = 1 - 0.025 ** (1 / 1000)
    assert audit.eps_lower_bound(0, 1000, 0, 1000, 0.0) == pytest.approx(math.log((1 - u) / u), rel=1e-12)
    # vectorized form agrees with the scalar one
    np.testing.assert_allclose(
        audit.eps_lower_bounds(np.array([fp, 500]), n0, np.array([fn, 500]), n1, delta), [expected, 0.0], rtol=1e-12
    )


def test_threshold_audit_on_gaussians_is_sound_and_has_power():
    rng = np.random.default_rng(1)
    delta = 1e-3
    # identical distributions: the bound is (essentially always) 0-ish, never large
    same = [audit.audit_samples(rng.normal(size=4000), rng.normal(size=4000), delta, 0.95)["eps_lb"] for _ in range(20)]
    assert max(same) < 0.3
    # a unit shift (mu-GDP with mu = 3, true eps at delta = 1e-3 about 8.2) is detected well above 2
    out = audit.audit_samples(rng.normal(size=20000), rng.normal(3.0, 1.0, size=20000), delta, 0.95)
    assert out["eps_lb"] > 2.0 and out["test"] == "T > t"


def test_objpert_threshold_identity_on_real_fits():
    """coef_ > t  <=>  b < c(t), checked on real fits whose noise b is replayed from the same seed."""
    for table in audit._objpert_tables(200):
        for seed in range(8):
            model = ObjPert(2.0, 1e-3, "y", insecure_seed=InsecureRandom(seed, warn=False)).fit(table)
            b = lattice_noise(InsecureRandom(seed, warn=False), model.noise_std_, 1)[0][0]  # ObjPert's exact draw
            c = audit.objpert_boundary(model, table)
            theta = model.coef_[0]
            ts = theta + np.array([-1e-6, 1e-6, -0.3, 0.3])
            np.testing.assert_array_equal(theta > ts, b < c(ts))


def test_scaled_source_only_shrinks_normals():
    base, other = InsecureRandom(3, warn=False), InsecureRandom(3, warn=False)
    scaled = audit.ScaledNormalSource(base, 0.25)
    np.testing.assert_allclose(scaled.standard_normal(5), 0.25 * other.standard_normal(5))
    np.testing.assert_array_equal(scaled.uint64(4), other.uint64(4))
    assert not scaled.private


def test_old_keying_is_str_of_the_parsed_value_and_is_restored():
    import marginals.spec.columns as spec_columns
    import marginals.spec.infer as spec_infer

    keys = spec_audit.old_series_keys
    np.testing.assert_array_equal(keys(pd.Series([True, False])), ["True", "False"])
    np.testing.assert_array_equal(keys(pd.Series([4.5, 2.0])), ["4.5", "2.0"])
    np.testing.assert_array_equal(keys(pd.Series([" true", "4.50 "], dtype=object)), ["true", "4.50"])
    original = spec_columns.series_keys
    with spec_audit.old_keying():
        assert spec_columns.series_keys is keys
        if hasattr(spec_infer, "series_keys"):
            assert spec_infer.series_keys is keys
    assert spec_columns.series_keys is original
    assert getattr(spec_infer, "series_keys", original) is original


def test_spec_broken_control_spells_the_keys_of_d_and_d_plus_one_differently(tmp_path):
    rho, delta = 0.05, 1e-6
    with spec_audit.old_keying():
        released = [spec_audit.released_keys(pd.read_csv(path), rho, delta, InsecureRandom(1, warn=False))[0]
                    for path in spec_audit.write_neighbours(tmp_path)]
    assert {("flag", "True"), ("flag", "False"), ("rating", "2.5")} <= released[0]
    assert {("flag", "true"), ("flag", "false"), ("rating", "2.50")} <= released[1]
    assert not released[0] & released[1]


def test_raw_path_releases_the_same_keys_for_shared_rows(tmp_path):
    """Issue 23's reproduction on the path the audit calls correct: the CLI's text reader."""
    released = [spec_audit.released_keys(read_csv_file(path, text=True, skipinitialspace=True), 0.05, 1e-6,
                                         InsecureRandom(1, warn=False))[0]
                for path in spec_audit.write_neighbours(tmp_path)]
    assert len(released[0]) == 5 and released[0] <= released[1]


def test_fixed_partition_is_the_identity_and_otherwise_the_base_draws():
    fixed, other = baselines.FixedPartition(InsecureRandom(3, warn=False)), InsecureRandom(3, warn=False)
    np.testing.assert_array_equal(fixed.permutation(5), np.arange(5))
    np.testing.assert_array_equal(fixed.uint64(4), other.uint64(4))
    assert fixed.random() == other.random() and fixed.permutations == 1 and not fixed.private


def test_tukey_neighbours_change_one_model_and_not_the_ptr_distance():
    (X, y), (X1, y1) = baselines.tukey_neighbours()
    assert len(y1) == len(y) + 1 == baselines.TUKEY_MODELS + 1
    # under the identity partition the added row joins row 0 (y = 1): their mean is FAR
    assert (y[0] + y1[-1]) / 2 == baselines.FAR and y[0] == y.min()
    out = baselines.audit_tukeyem(40, False, InsecureRandom(5, warn=False), 0.95)
    assert out["eps_claim"] == 1.0 and out["params"]["ptr_failures"] == 0
    first, second = out["params"]["ptr_distance"]
    assert first == second  # None on both sides if TukeyResult stops exposing it


def test_pmt_audit_replays_the_estimator_and_hits_the_clip_radii():
    tables = baselines.pmt_audit_tables(200)
    arrays, model = baselines.pmt_audit_arrays(tables, 1.0, 1e-3, InsecureRandom(0, warn=False))
    mu = baselines.pmt_mu(1.0, 1e-3)
    for table, (X, y) in zip(tables, arrays):
        for seed in range(4):
            fitted = PMTLinearRegression(1.0, 1e-3, "y", public_moment=baselines.PMT_MOMENT,
                                         insecure_seed=InsecureRandom(seed, warn=False)).fit(table)
            assert fitted.coef_[0] == baselines.pmt_fit_coef(X, y, model, mu, InsecureRandom(seed, warn=False))
        moment = baselines.PMT_MOMENT[:1, :1] + model.moment_ridge * np.eye(1)
        transformed, radius, _, _ = pmt_transform(X, moment, model.eta)
        np.testing.assert_allclose(np.abs(transformed), radius)  # every row on the clip radius
    # replace-one neighbours: same n, one label flipped
    (X0, y0), (X1, y1) = arrays
    assert X0.shape == X1.shape and np.sum(y0 != y1) == 1


@pytest.mark.slow
@pytest.mark.parametrize("key", [a[1] for a in audit.AUDITS])
def test_small_audit_configuration(key):
    # one test per audit (its own seeded stream), so pytest-xdist spreads the ~3 CPU minutes over the workers
    results = audit.run_audit("small", seed=2026, only=[key])
    name = next(a[0] for a in audit.AUDITS if a[1] == key)
    assert [r.mechanism.split(" BROKEN")[0] for r in results] == [name, name] and [r.broken for r in results] == [False, True]
    for r in results:
        assert r.runs == audit.CONFIGS["small"][key]
        if not r.broken:
            assert r.eps_lb <= r.eps_claim, f"{r.mechanism}: empirical eps {r.eps_lb:.3f} > claim {r.eps_claim:.3f}"
        elif r.expect_caught:
            assert r.eps_lb > r.eps_claim, f"{r.mechanism}: broken control not caught ({r.eps_lb:.3f})"
    table = audit.format_table(results)
    assert "VIOLATION" not in table and "NOT CAUGHT" not in table


def test_every_audit_runs_in_the_small_configuration():
    assert {a[1] for a in audit.AUDITS} == set(audit.CONFIGS["small"]) == set(audit.CONFIGS["default"])


def test_shrunken_lattice_noise_shrinks_draws_charges_the_claim_and_restores():
    values = np.zeros(2000)
    honest = adassp_module.lattice_gaussian(InsecureRandom(1, warn=False), values, 1.0, 0.5)
    with audit.shrunken_lattice_noise(adassp_module):
        broken = adassp_module.lattice_gaussian(InsecureRandom(1, warn=False), values, 1.0, 0.5)
    assert broken.values.std() == pytest.approx(honest.values.std() / audit.BROKEN_FACTOR, rel=0.1)
    assert broken.rho == 0.5 and honest.rho <= 0.5  # the broken control under-charges
    assert adassp_module.lattice_gaussian is not None and adassp_module.lattice_gaussian.__module__ == "marginals.lattice"


def test_person_level_neighbours_differ_by_k_rows_in_one_cell_and_the_control_uses_sensitivity_1():
    counts, neighbour = audit_units.unit_neighbours(InsecureRandom(3, warn=False))
    diff = neighbour - counts
    assert diff[0] == audit_units.K < audit_units.ADDED and not diff[1:].any()  # the bound cut the unit to k
    honest = audit_units.audit_person_level(200, False, InsecureRandom(1, warn=False), 0.95)
    broken = audit_units.audit_person_level(200, True, InsecureRandom(1, warn=False), 0.95)
    assert honest["eps_claim"] == broken["eps_claim"]  # the control claims the honest guarantee
    assert broken["params"]["sigma_used"] == pytest.approx(honest["params"]["sigma_used"] / audit_units.K)

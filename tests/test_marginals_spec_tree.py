"""The numeric spec inference: the public tree's sensitivity, the ledger, the density and its decoding."""

import numpy as np
import pandas as pd
import pytest

from marginals.privacy import Accountant
from marginals.randomness import InsecureRandom
from marginals.spec.columns import SpecError
from marginals.spec.discretize import Discretizer
from marginals.spec.grid import CAP, COARSE_OF, N_FINE, UNIT_MAX, UNIT_PARENT, UNITS, level_counts
from marginals.spec.infer import infer_spec
from marginals.spec.tree import measure_shape

BASE = np.concatenate([np.arange(-50, 2000, 7.0), [0.0] * 30, np.linspace(0.1, 99.9, 40), [np.nan] * 5])
ADVERSARIAL = [1e12, -1e12, np.inf, -np.inf, CAP, -CAP, 0.0, 0.5, -0.5, 16.5, 1.0, 1.1, 9.1, 10.0, 999.0, 999.5,
               1000.0, -1000.0, -1001.0, UNIT_MAX - 1.0, 1e-3, -1e-3, 1e-4, -1e-4, 5e-324, np.nan]


def _levels(values: np.ndarray) -> list[np.ndarray]:
    return level_counts(values, np.isnan(values))


@pytest.mark.parametrize("extra", ADVERSARIAL)
def test_one_added_row_moves_each_level_by_one_count(extra):
    before, after = _levels(BASE), _levels(np.append(BASE, extra))
    for level, (a, b) in enumerate(zip(before, after)):
        diff = b - a
        assert diff.min() >= 0 and diff.sum() <= 1 and np.sqrt((diff**2).sum()) <= 1, (level, extra)
    assert sum(int((b - a).sum()) for a, b in zip(before[:2], after[:2])) == (1 if np.isnan(extra) else 2)


def test_levels_nest_and_cover_every_value():
    values = np.append(BASE, ADVERSARIAL)
    one, two, three = _levels(values)
    assert one.sum() == len(values) and two.sum() == (~np.isnan(values)).sum()
    coarse_from_fine = np.bincount(2 * COARSE_OF[np.arange(2 * N_FINE) // 2] + np.arange(2 * N_FINE) % 2,
                                   weights=two, minlength=len(one) - 1)
    assert np.array_equal(coarse_from_fine, one[1:])
    unit_sums = np.bincount(UNIT_PARENT, weights=three, minlength=N_FINE)
    assert np.array_equal(unit_sums[UNIT_PARENT], two[0::2][UNIT_PARENT])
    assert len(UNITS) == 2 * UNIT_MAX


@pytest.mark.parametrize("values, levels", [(np.arange(30_000) % 90 + 17.0, 3), (np.linspace(1e4, 1e6, 30_000), 2)])
def test_the_ledger_charges_sum_to_the_column_rho(values, levels):
    acct = Accountant(1.0)
    shape = measure_shape("x", values, np.zeros(len(values), dtype=bool), 0.01, 7, acct)
    assert shape is not None and [c.label for c in acct.charges] == [f"spec x: level {k}" for k in range(1, levels + 1)]
    assert acct.spent == pytest.approx(0.01, rel=1e-6) and acct.spent <= 0.01 * (1 + 1e-9)


def _zero_inflated(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(n) < 0.92, 0, np.minimum(np.round(rng.lognormal(8.0, 1.0, n)), 99_999))


def test_a_zero_inflated_column_keeps_a_zero_bin_and_a_tail_at_a_realistic_budget():
    gains = _zero_inflated(32_561, 0)
    for seed in range(10):  # rho 2e-4: about a numeric column's share of adult-raw's spec at epsilon 1
        spec = infer_spec(pd.DataFrame({"g": gains}), Accountant(1.0), rho=2e-4, schema={"columns": {"g": "numeric"}},
                          rng=seed).to_spec()["columns"]["g"]
        assert spec["edges"][:2] == [0, 1] and len(spec["edges"]) >= 6 and spec["edges"][-1] >= 2_000, spec["edges"]


def test_an_integer_column_stays_inside_its_observed_range():
    rng = np.random.default_rng(1)
    shares = np.r_[[0.005] * 4, [0.02] * 4, [0.3, 0.25, 0.05, 0.04, 0.18, 0.05, 0.02, 0.01]]
    edu = rng.choice(np.arange(1, 17), 32_561, p=shares)
    for seed in range(10):
        d = infer_spec(pd.DataFrame({"e": edu}), Accountant(1.0), rho=1e-4, schema={"columns": {"e": "numeric"}},
                       rng=seed)
        spec = d.to_spec()["columns"]["e"]
        assert spec["integer"] is True and 1 <= spec["edges"][0] and spec["edges"][-1] <= 16, spec["edges"]
        codes = d.transform(pd.DataFrame({"e": edu}))
        back = d.inverse_transform(codes, rng=np.random.default_rng(seed), numeric="uniform")["e"]
        assert back.min() >= spec["edges"][0] and back.max() <= spec["edges"][-1]


def test_a_weak_upper_end_is_never_placed_above_the_data():
    # adult's education-num shape: the top value (16) holds 1.3% of the rows, near the noise floor at a
    # small budget, so the prefix and suffix tests inside the fine cell [16, 18) can cross: the mass
    # must go to 16 (inside the data), never to 17 (issue 24: "no 17 or 18 for a 1-16 column").
    counts = np.array([51, 168, 333, 646, 514, 933, 1175, 433, 10501, 7291, 1382, 1067, 5355, 1723, 576, 413])
    values = np.repeat(np.arange(1, 17), counts).astype(float)
    outside = []
    for seed in range(200):
        shape = measure_shape("e", values, np.zeros(len(values), dtype=bool), 6e-5, InsecureRandom(seed, warn=False),
                              Accountant(1.0))
        pieces = shape.pieces if shape is not None else np.zeros((0, 3))
        outside += [seed] * bool(((pieces[:, 1] > 16) | (pieces[:, 0] < 1)).any())
    assert outside == []


def _spec(density: list, edges: list, integer: bool) -> Discretizer:
    return Discretizer.from_spec({"columns": {"v": {"type": "numeric", "edges": edges, "integer": integer,
                                                    "density": density}}})


def test_density_draws_reproduce_the_stored_masses():
    d = _spec([[0, 0, 0.5], [1, 9, 0.2], [40, 40, 0.3]], [0, 1, 50], True)
    codes = pd.DataFrame({"v": np.r_[np.zeros(20_000, dtype=int), np.ones(30_000, dtype=int)]})
    out = d.inverse_transform(codes, rng=np.random.default_rng(0), numeric="uniform")["v"].to_numpy()
    assert (out[:20_000] == 0).all()
    tail = out[20_000:]
    assert (tail == 40).mean() == pytest.approx(0.3 / 0.5, abs=0.02) and tail.min() >= 1 and tail.max() <= 40
    assert set(np.unique(tail)) <= set(range(1, 10)) | {40}
    ones = np.bincount(tail[tail < 10], minlength=10)[1:] / (tail < 10).sum()
    assert ones == pytest.approx(np.full(9, 1 / 9), abs=0.02)


def test_continuous_density_with_an_atom_and_old_specs_stay_uniform():
    d = _spec([[0, 0, 0.6], [10, 100, 0.4]], [0, 50, 100], False)
    out = d.inverse_transform(pd.DataFrame({"v": np.zeros(10_000, dtype=int)}), rng=np.random.default_rng(1),
                              numeric="uniform")["v"].to_numpy()
    share = 0.6 / (0.6 + 0.4 * 40 / 90)
    assert (out == 0).mean() == pytest.approx(share, abs=0.02) and ((out == 0) | ((out >= 10) & (out < 50))).all()
    plain = Discretizer.from_spec({"columns": {"v": {"type": "numeric", "edges": [0, 50, 100]}}})
    out = plain.inverse_transform(pd.DataFrame({"v": np.zeros(10_000, dtype=int)}), rng=np.random.default_rng(1),
                                  numeric="uniform")["v"].to_numpy()
    assert (out == 0).mean() == 0 and out.mean() == pytest.approx(25, abs=1)


@pytest.mark.parametrize("density", [[[0, 200, 1.0]], [[5, 1, 1.0]], [[0, 1, -1.0]], [[0.5, 2, 1.0]], [[0, 1, 0]],
                                     [], [[0, 1]]])
def test_a_bad_density_is_refused(density):
    with pytest.raises(SpecError, match="density"):
        _spec(density, [0, 50, 100], True)

"""`benchmarks.person_level`: its synthetic households (public sizes, deterministic) and the rows a bound drops."""

from __future__ import annotations

import numpy as np

from benchmarks import person_level as bench
from marginals.randomness import InsecureRandom
from marginals.units import bound_rows, unit_key


def test_households_are_deterministic_cover_every_row_and_have_public_sizes():
    ids = bench.households(5000)
    assert np.array_equal(ids, bench.households(5000)) and not np.array_equal(ids, bench.households(5000, seed=1))
    sizes = np.bincount(ids)
    assert len(ids) == 5000 and sizes.min() >= 1 and sizes.max() <= max(bench.HOUSEHOLD_SIZES)
    assert abs(np.mean(sizes == 1) - bench.HOUSEHOLD_SIZES[1]) < 0.05  # the public distribution, not the data
    assert not np.all(np.diff(ids) >= 0)  # a household's rows are scattered through the table


def test_rows_dropped_is_what_any_key_drops():
    ids = bench.households(3000)
    for k in (1, 2, 4):
        for seed in (0, 1):
            kept = bound_rows(ids, k, unit_key(InsecureRandom(seed, warn=False)))
            assert (~kept).sum() == bench.rows_dropped(ids, k)

"""The census-like generator of `benchmarks.aim_scale`: domain profile, dependence structure,
zero mass of money amounts, determinism and chunked sampling from one model."""

import numpy as np
import pytest

from benchmarks.census_like import build_model, generate, sample


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def _conditional_entropy(child: np.ndarray, parent: np.ndarray, child_size: int, parent_size: int) -> float:
    """H(child | parent) in bits from a sample."""
    joint = np.bincount(parent.astype(np.int64) * child_size + child, minlength=parent_size * child_size)
    return _entropy(joint) - _entropy(joint.reshape(parent_size, child_size).sum(axis=1))


def _group(model, kind: str) -> tuple[int, ...]:
    return model.groups[model.kinds.index(kind)]


@pytest.mark.parametrize("attrs, big, pairs, mid", [(35, 1, 1, 8), (100, 3, 3, 23), (20, 1, 1, 5)])
def test_domain_profile_is_like_a_census_extract(attrs, big, pairs, mid):
    sizes = np.array(build_model(attrs, 4).sizes)
    assert len(sizes) == attrs
    assert ((sizes >= 170) & (sizes <= 190)).sum() == big
    assert ((sizes >= 90) & (sizes <= 110)).sum() == 2 * pairs
    assert ((sizes >= 20) & (sizes <= 30)).sum() == mid
    assert ((sizes >= 2) & (sizes <= 15)).sum() == attrs - big - 2 * pairs - mid


def test_groups_cover_every_column_once_with_3_to_8_members():
    model = build_model(50, 1)
    columns = sorted(c for g in model.groups for c in g)
    assert columns == list(range(50))
    assert all(2 <= len(g) <= 8 for g in model.groups)
    assert {"pair", "code", "money", "plain"} <= set(model.kinds)


def test_coarse_code_is_near_functional_and_hundred_pair_strongly_dependent():
    model = build_model(35, 0)
    codes, sizes = generate(35, 30_000, 0)
    detailed, coarse = _group(model, "code")[:2]
    h_coarse = _entropy(np.bincount(codes[coarse]))
    h_given = _conditional_entropy(codes[coarse], codes[detailed], sizes[coarse], sizes[detailed])
    assert sizes[detailed] >= 170 and 20 <= sizes[coarse] <= 30
    assert h_coarse > 1.5 and h_given < 0.2  # knowing the detailed code leaves little of the coarse one
    first, second = _group(model, "pair")[:2]
    assert sizes[first] >= 90 and sizes[second] >= 90
    assert np.corrcoef(codes[first], codes[second])[0, 1] > 0.9


def test_money_amounts_have_a_large_zero_mass_and_move_together():
    model = build_model(35, 0)
    codes, sizes = generate(35, 30_000, 0)
    amounts = [c for c in _group(model, "money") if sizes[c] >= 20]
    assert len(amounts) >= 2
    zero = [codes[c] == 0 for c in amounts]
    assert all(0.3 <= z.mean() <= 0.9 for z in zero)
    assert zero[1][zero[0]].mean() > zero[1].mean() + 0.1  # none of one makes none of the other likelier
    positive = ~zero[0] & ~zero[1]
    assert np.corrcoef(codes[amounts[0]][positive], codes[amounts[1]][positive])[0, 1] > 0.3


def test_generation_is_deterministic_given_the_seed():
    first, sizes = generate(20, 5_000, 3)
    again, sizes_again = generate(20, 5_000, 3)
    other, _ = generate(20, 5_000, 4)
    assert first.dtype == np.uint16 and first.shape == (20, 5_000)
    np.testing.assert_array_equal(first, again)
    assert sizes == sizes_again
    assert not np.array_equal(first, other)
    assert all(int(first[j].max()) < sizes[j] for j in range(20))


def test_chunked_sampling_from_one_model_has_the_same_distribution():
    model = build_model(20, 2)
    whole = sample(model, 40_000, np.random.default_rng(0))
    chunks = np.concatenate([sample(model, 4_000, np.random.default_rng([1, k])) for k in range(10)], axis=1)
    chunked_generate, _ = generate(20, 40_000, 2, chunk=7_000)
    sizes = model.sizes
    detailed, coarse = _group(model, "code")[:2]
    for table in (chunks, chunked_generate):
        for j in range(20):
            p, q = (np.bincount(t[j], minlength=sizes[j]) / t.shape[1] for t in (whole, table))
            assert 0.5 * np.abs(p - q).sum() < 0.01 + 1.2 * np.sqrt(sizes[j] / 40_000), j  # ~2x sampling noise
        pair = [np.bincount(t[detailed].astype(np.int64) * sizes[coarse] + t[coarse], minlength=sizes[detailed] * sizes[coarse])
                for t in (whole, table)]  # fmt: skip
        assert 0.5 * np.abs(pair[0] / 40_000 - pair[1] / 40_000).sum() < 0.12

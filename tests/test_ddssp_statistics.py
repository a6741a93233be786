"""ddssp.statistics: Z^T Z from pairwise marginals equals the explicitly encoded Z^T Z."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ddssp.encoding import EncodingOptions, build_encoding, categorical_preset
from ddssp.statistics import gram_from_marginals, statistics_from_frame, sufficient_statistics, uncovered_pairs
from marginals import Dataset, Domain
from benchmarks.data import data_dir, load_bundled

HAVE_DATA = data_dir() is not None


@pytest.fixture
def random_dataset(random_table):
    """random_dataset(seed, n=500, target_levels=4): a 1-level attribute, a never-occurring level
    ("gap" = 3) and a target t depending on tri and five."""
    def make(seed: int, n: int = 500, target_levels: int = 4) -> Dataset:
        sizes = {"one": 1, "bin": 2, "tri": 3, "five": 5, "gap": 4, "six": 6, "t": target_levels}
        target = lambda c, rng: (c["tri"] + c["five"] + rng.integers(0, 2, n)) % target_levels  # noqa: E731
        return random_table(seed, sizes, n, {"t": target})

    return make


def explicit_gram(encoding, df: pd.DataFrame) -> np.ndarray:
    X, y = encoding.encode(df)
    Z = np.column_stack([X, y])
    return Z.T @ Z


def assert_close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-9) -> None:
    scale = max(1.0, float(np.max(np.abs(b))))
    assert a.shape == b.shape
    assert np.max(np.abs(a - b)) <= rtol * scale


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("drop", ["first", None])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("categorical", [None, ["tri", "gap", "one"], []])
def test_gram_equals_explicit_on_random_data(seed, drop, intercept, categorical, random_dataset):
    data = random_dataset(seed)
    enc = build_encoding(data.domain, "t", "linear", categorical, EncodingOptions(drop=drop, intercept=intercept))
    gram, n = gram_from_marginals(data, enc)
    assert n == len(data)
    assert_close(gram, explicit_gram(enc, data.to_df()))


def test_gram_logistic_target_and_user_values(random_dataset):
    data = random_dataset(3, target_levels=2)
    opts = EncodingOptions(values={"five": [0.0, 10.0, -3.0, 2.5, 7.0]}, intercept=True)
    enc = build_encoding(data.domain, "t", "logistic", ["bin", "six"], opts)
    stats = sufficient_statistics(data, enc)
    assert stats.yty == len(data)  # y in {-1, +1}
    gram = explicit_gram(enc, data.to_df())
    assert_close(stats.XtX, gram[:-1, :-1])
    assert_close(stats.Xty, gram[:-1, -1])
    assert stats.feature_names == enc.feature_names


@pytest.mark.skipif(not HAVE_DATA, reason="bundled data folder absent")
@pytest.mark.parametrize("target,task", [("education-num", "linear"), ("income>50K", "logistic")])
def test_gram_equals_explicit_on_adult(target, task):
    data = load_bundled("adult", "train", 50_000)
    enc = build_encoding(data.domain, target, task, categorical_preset("adult"))
    gram, n = gram_from_marginals(data, enc)
    assert gram.shape == (enc.n_features + 1,) * 2 and n == len(data)
    assert_close(gram, explicit_gram(enc, data.to_df()))


class CountingSource:
    """A marginal source with float counts that records how it is queried."""

    def __init__(self, data: Dataset, cliques=None, scale: float = 1.0):
        self.data, self.domain, self.calls, self.scale = data, data.domain, [], scale
        self.total = scale * data.total
        if cliques is not None:  # stands in for a fitted model: cliques + synthetic rows
            self.cliques = tuple(cliques)
            self.synthetic_data = lambda n=None, rng=None: data.to_df()

    def marginals(self, cliques):
        self.calls.append(list(cliques))
        return [self.scale * t.astype(np.float64) for t in self.data.marginals(cliques)]


def test_one_batched_request_with_pairs_and_one_way_marginals(random_dataset):
    data = random_dataset(4)
    enc = build_encoding(data.domain, "t")
    source = CountingSource(data)
    gram, _ = gram_from_marginals(source, enc)
    assert len(source.calls) == 1
    asked = source.calls[0]
    k = len(data.domain)
    assert len(asked) == k * (k - 1) // 2 + k
    assert sum(len(c) == 1 for c in asked) == k
    assert_close(gram, explicit_gram(enc, data.to_df()))


def test_float_counts_scale_linearly_and_n_is_their_total(random_dataset):
    data = random_dataset(5)
    enc = build_encoding(data.domain, "t", options=EncodingOptions(intercept=True))
    gram, n = gram_from_marginals(CountingSource(data, scale=2.5), enc)
    assert np.isclose(n, 2.5 * len(data))
    assert_close(gram, 2.5 * explicit_gram(enc, data.to_df()))


def test_statistics_from_frame_ignores_extra_columns(random_dataset):
    data = random_dataset(6)
    enc = build_encoding(data.domain, "t")
    df = data.to_df().assign(extra=7)
    stats = statistics_from_frame(df, enc)
    assert_close(stats.XtX, sufficient_statistics(data, enc).XtX)


def test_warns_when_pairs_are_not_inside_model_cliques(random_dataset):
    data = random_dataset(7)
    enc = build_encoding(data.domain, "t")
    attrs = data.domain.attrs
    covered = [attrs]  # one clique with everything: nothing inferred
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gram_from_marginals(CountingSource(data, cliques=covered), enc)
    cliques = [("one", "bin", "tri"), ("tri", "five", "gap", "six", "t")]
    missing = uncovered_pairs([(a, b) for i, a in enumerate(attrs) for b in attrs[i + 1:]], cliques)
    assert len(missing) == 2 * 4  # {one, bin} x {five, gap, six, t}
    expected = r"8 of 21 attribute pairs .* inferred by the model rather than measured \(e.g. \(one, five\)"
    with pytest.warns(UserWarning, match=expected):
        gram_from_marginals(CountingSource(data, cliques=cliques), enc)


def test_bad_sources(random_dataset):
    data = random_dataset(8)
    enc = build_encoding(data.domain, "t")
    with pytest.raises(TypeError, match="lacks .marginals"):
        gram_from_marginals(SimpleNamespace(domain=data.domain, total=1.0), enc)
    with pytest.raises(ValueError, match="empty table"):
        gram_from_marginals(CountingSource(data, scale=0.0), enc)
    other = Domain(data.domain.attrs, tuple(m + 1 for m in data.domain.shape))
    with pytest.raises(ValueError, match="levels in the source but"):
        gram_from_marginals(SimpleNamespace(domain=other, total=1.0, marginals=data.marginals), enc)
    short = SimpleNamespace(domain=data.domain, total=1.0, marginals=lambda cl: data.marginals(cl)[:-1])
    with pytest.raises(ValueError, match="returned 27 marginals for 28 requested"):
        gram_from_marginals(short, enc)

"""The `MarginalSource` protocol: who implements it, static checks, and the DataFrame adapter."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aim import AIM
from marginals import Dataset, Domain
from marginals.datasets import demo_dataset
from marginals.source import (
    MarginalSource,
    MeasuredSource,
    ModelSource,
    RowSource,
    as_marginal_source,
    check_unweighted,
    implements,
    is_rows,
)
from pgm.model import Model

DOM = Domain(("a", "b"), (2, 3))
DF = pd.DataFrame({"a": [0, 1, 1], "b": [2, 1, 0]})


@pytest.fixture(scope="module")
def release():
    return AIM(1.0, 1e-6, max_iters=5, final_iters=5, insecure_seed=3).run(demo_dataset(500, seed=2))


def test_rows_models_and_releases_implement_their_protocols(release):
    data = Dataset(DF, DOM)
    model = Model(DOM, [("a", "b")], [np.zeros((2, 3))], 6.0)
    view = release.without([release.domain.attrs[0]])
    assert implements(data, RowSource) and is_rows(data) and not implements(data, ModelSource)
    assert implements(model, ModelSource) and not is_rows(model) and not implements(model, MeasuredSource)
    for source in (release, view):
        assert implements(source, MeasuredSource) and implements(source, MarginalSource) and not is_rows(source)
    assert view.total == release.total == release.model.total
    assert view.cliques == release.model.cliques and view.measurements is release.measurements


def test_totals_count_rows_or_weights():
    assert Dataset(DF, DOM).total == 3.0
    weighted = Dataset(DF, DOM, weights=[0.5, 2.0, 1.0])
    assert weighted.weighted and weighted.total == 3.5
    assert weighted.marginal(("a",)).sum() == pytest.approx(weighted.total)
    with pytest.raises(ValueError, match="row weights"):
        check_unweighted(weighted, "AIM.run")
    check_unweighted(Dataset(DF, DOM), "AIM.run")


def test_implements_never_evaluates_a_property():
    class Lazy:
        domain, weighted = DOM, False

        @property
        def total(self) -> float:
            raise AssertionError("a structural check must not run a pass over the data")

        @property
        def records(self) -> int:
            raise AssertionError("a structural check must not run a pass over the data")

        def marginals(self, cliques):
            return []

    assert implements(Lazy(), RowSource) and is_rows(Lazy())
    assert not implements(object(), MarginalSource)


def test_dataframe_adapter_and_errors():
    source = as_marginal_source(DF.assign(extra=1)[["b", "extra", "a"]], DOM)
    assert isinstance(source, Dataset)
    assert source.marginal(("a", "b")).tolist() == [[0, 0, 1], [1, 1, 0]]
    with pytest.raises(ValueError, match="domain="):
        as_marginal_source(DF)
    with pytest.raises(TypeError, match="marginals.Domain"):
        as_marginal_source(DF, domain={"a": 2})
    with pytest.raises(TypeError, match="got list"):
        as_marginal_source([[0, 1]], DOM)

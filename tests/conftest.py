"""The shared test kit: random graphical models, random mixed tables, and a zCDP -> (eps, delta)
conversion computed independently of `marginals.privacy` (an oracle for budget tests).

The helpers are session fixtures that return functions, so a test asks for them by name.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import zipfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import pytest

from marginals import Dataset, Domain
from pgm import Model


def make_random_model(domain: Domain, cliques: Sequence[Sequence[str]], rng: np.random.Generator | int,
                      total: float = 1000.0, scale: float = 1.0, zeros: float = 0.0) -> Model:  # fmt: skip
    """A model with N(0, scale^2) log-potentials on ``cliques`` (drawn clique by clique from ``rng``,
    a Generator or a seed); with ``zeros`` > 0 that fraction of cells is -inf (structural zeros)."""
    rng = np.random.default_rng(rng)
    potentials = []
    for c in cliques:
        values = rng.normal(scale=scale, size=domain.project(c).shape)
        if zeros:
            values[rng.random(values.shape) < zeros] = -np.inf
        potentials.append(values)
    return Model(domain, cliques, potentials, total)


def make_random_table(seed: int, sizes: Mapping[str, int], n: int,
                      targets: Mapping[str, Callable[[dict, np.random.Generator], np.ndarray]] | None = None) -> Dataset:  # fmt: skip
    """``n`` rows over ``sizes``: every column uniform over its levels, except ``gap`` whose last
    level never occurs; then each ``targets[name](columns, rng)`` replaces column ``name`` (in order)."""
    rng = np.random.default_rng(seed)
    cols = {a: rng.integers(0, m, n) for a, m in sizes.items()}
    if "gap" in sizes:
        cols["gap"] = rng.integers(0, sizes["gap"] - 1, n)
    for name, rule in (targets or {}).items():
        cols[name] = rule(cols, rng)
    return Dataset(pd.DataFrame(cols), Domain.from_dict(dict(sizes)))


def cks_log_delta(rho: float, eps: float) -> float:
    """log delta of the Canonne-Kamath-Steinke (2020, Prop. 12) conversion of rho-zCDP at ``eps``,
    min over alpha > 1 of (alpha-1)(alpha rho - eps) - log(alpha-1) + alpha log(1 - 1/alpha), found by
    a log-spaced grid over alpha - 1 in [1e-8, 1e8], refined around its best point (no root finding)."""
    lo, hi = -8.0, 8.0
    for _ in range(8):
        t = np.linspace(lo, hi, 2001)
        am1 = 10.0**t
        alpha = 1.0 + am1
        values = am1 * (alpha * rho - eps) - np.log(am1) + alpha * (np.log(am1) - np.log1p(am1))
        k = int(np.argmin(values))
        lo, hi = t[max(k - 2, 0)], t[min(k + 2, t.size - 1)]
    return min(0.0, float(values[k]))


def bisect_rho(eps: float, delta: float) -> float:
    """The largest rho whose CKS20 delta at ``eps`` is at most ``delta``, by bisection on `cks_log_delta`."""
    target, lo, hi = math.log(delta), 0.0, float(eps)
    while cks_log_delta(hi, eps) <= target:
        hi *= 2.0
    while hi - lo > 1e-15 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cks_log_delta(mid, eps) <= target else (lo, mid)
    return lo


@pytest.fixture(scope="session")
def random_model():
    """`make_random_model`: random log-potentials on given cliques."""
    return make_random_model


@pytest.fixture(scope="session")
def random_table():
    """`make_random_table`: a random table of codes with a never-occurring level and derived targets."""
    return make_random_table


@pytest.fixture(scope="session")
def zcdp_rho():
    """`bisect_rho`: rho from (eps, delta), numerically independent of `marginals.cdp_rho`."""
    return bisect_rho


@pytest.fixture
def raises_private():
    """``pytest.raises`` for an error whose message names only the column and the rule: the exact
    count, the value and its row (matched by the regex ``detail``) live in ``exc.detail`` (shown
    on request), never in the message (issue 23: messages quote no private value or count)."""

    @contextlib.contextmanager
    def check(detail: str, exc_type: type = ValueError):
        with pytest.raises(exc_type) as info:
            yield info
        err, chain = info.value, info.value
        while chain is not None and not getattr(chain, "detail", None):
            chain = chain.__cause__ or chain.__context__
        assert chain is not None and re.search(detail, chain.detail), (str(err), detail)
        assert "e.g." not in str(err) and " at row " not in str(err), str(err)

    return check


def rewrite_release_file(path: Path, out: Path, edit: Callable[[dict], None]) -> Path:
    """Copy the release file ``path`` to ``out`` with ``edit(header)`` applied to its JSON header."""
    with zipfile.ZipFile(path) as zf:
        arrays = {name[:-4]: np.lib.format.read_array(zf.open(name)) for name in zf.namelist()}
    header = json.loads(str(arrays["header"]))
    edit(header)
    arrays["header"] = np.array(json.dumps(header))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    Path(out).write_bytes(buffer.getvalue())
    return Path(out)


@pytest.fixture(scope="session")
def rewrite_release():
    """`rewrite_release_file`: a crafted or old-format copy of a release file."""
    return rewrite_release_file


"""Synthetic rows from a fitted model.

Columns are generated in reverse elimination order. When an attribute is eliminated, its
neighbours in the triangulated graph are all eliminated later, so in reverse order they are
already generated: they are the attribute's parents, and parents plus attribute lie inside one
junction-tree node. Its conditional distribution given the parents is therefore exact under
the model and a cheap projection of a calibrated belief.

Within each parent group of g rows the column is filled by systematic sampling: one shared
uniform offset u, row r of the group gets the category whose CDF interval holds (r + u) / g.
Every category then gets floor or ceil of g * p (randomized rounding; the group total is
exact, and the expectation is g * p). Rows are visited in a random order within their group,
so two conditionally independent columns with the same parents do not correlate.

Sampling is post-processing of a public model, so its randomness follows the sampler convention
of `marginals.randomness`: a numpy Generator, an int seed (reproducible rows) or None.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from marginals.domain import code_dtype
from marginals.randomness import SamplingSeed, sampling_rng


def group_sample(groups: np.ndarray, cond: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row: row i is in group ``groups[i]``; ``cond[g]`` is that group's distribution."""
    n = groups.size
    n_groups, m = cond.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    sums = cond.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        probs = np.where(sums > 0, cond / sums, 1.0 / m)  # a group with no mass: uniform (never hit in exact sampling)
    # By group, in random order inside each group: a random permutation, then a stable sort by
    # group (radix sort on a 16-bit key when the groups fit: several times faster than lexsort).
    perm = rng.permutation(n)
    key = groups[perm].astype(np.uint16) if n_groups <= 1 << 16 else groups[perm]
    order = perm[np.argsort(key, kind="stable")]
    sorted_groups = groups[order]
    counts = np.bincount(groups, minlength=n_groups)
    starts = np.cumsum(counts) - counts
    rank = np.arange(n) - starts[sorted_groups]
    offset = rng.random(n_groups)
    u = (rank + offset[sorted_groups]) / counts[sorted_groups]
    cdf = np.cumsum(probs, axis=1) + np.arange(n_groups)[:, None]  # row g lives in [g, g + 1]
    pos = np.searchsorted(cdf.ravel(), sorted_groups + u, side="right")
    values = np.clip(pos - sorted_groups * m, 0, m - 1)
    out = np.empty(n, dtype=np.int64)
    out[order] = values
    return out


def sample_rows(model, n: int | None = None, rng: SamplingSeed = None) -> pd.DataFrame:
    """``n`` rows (default round(model.total)) sampled from ``model`` (see the module docstring);
    a DataFrame in domain order.

    ``rng``: a Generator, an int seed or None (fresh OS entropy), as `marginals.randomness.sampling_rng`.
    """
    rng = sampling_rng(rng, "rng")
    n = int(round(model.total)) if n is None else int(n)
    if n < 0:
        raise ValueError(f"number of rows must be >= 0, got {n}")
    domain, tree = model.domain, model.tree
    columns: dict[str, np.ndarray] = {}
    elim = dict(zip(tree.order, tree.elimination_cliques))
    for attr in reversed(tree.order):
        parents = tuple(a for a in elim[attr] if a != attr)
        table = model.marginals([parents + (attr,)])[0]
        cond = table.reshape(-1, domain[attr])
        groups = np.zeros(n, dtype=np.int64)
        for p in parents:
            groups = groups * domain[p] + columns[p]
        columns[attr] = group_sample(groups, cond, rng)
    shuffle = rng.permutation(n)
    data = {a: columns[a][shuffle].astype(code_dtype(domain[a])) for a in domain.attrs}
    return pd.DataFrame(data, columns=list(domain.attrs))

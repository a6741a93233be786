"""Generated tables that behave like census extracts (the wide configurations of `benchmarks.aim_scale`).

A real 35-attribute census extract has domains of 2-181 levels and groups of a few strongly
dependent attributes: a detailed and a coarse code of the same thing (occupation and its major
group; age and age band), money amounts with a large zero mass that move together, two ~100-level
attributes that follow each other (age and years at the address, place of birth and of work), and
weaker links between the groups (age shapes employment, income and household).

`build_model(attrs, seed)` draws such a structure and its conditional tables once, as a Bayesian
network over the table's attributes plus hidden "type" variables: one global type that depends on
the first ~100-level attribute (the age-like hub), one type per group that depends on the global
type, and within each group a root that depends on the group's type and children that depend on
earlier members (near-functional codes, shifted copies, Dirichlet tables with small concentration).
Domains follow the extract: per 35 attributes one of ~180 levels, two of ~100, eight of 20-30 and
the rest 2-15. `sample(model, rows, rng)` draws rows from a model (vectorized, one pass per
attribute), so a large table is generated in chunks from one model; `generate(attrs, rows, seed)`
is the seeded table of `aim_scale`'s configurations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: rows sampled at a time by `generate` (bounds the memory of a 1M-row table)
CHUNK_ROWS = 250_000
#: most parent configurations x levels one conditional table may hold
MAX_TABLE_CELLS = 400_000
#: levels of the hidden global type and of each group's type
GLOBAL_TYPES, GROUP_TYPES, MONEY_LEVELS = 6, 5, 8


@dataclass(frozen=True)
class Node:
    """One variable of the network: its levels, parents (earlier nodes) and cumulative conditional
    table (one row per parent configuration, parents' codes mixed first-parent-major)."""

    name: str
    size: int
    parents: tuple[int, ...]
    cdf: np.ndarray


@dataclass(frozen=True)
class CensusModel:
    """A census-like network: its nodes (topological order), which nodes are the table's columns
    (in column order), the column groups and each group's kind."""

    nodes: tuple[Node, ...]
    columns: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]
    kinds: tuple[str, ...]

    @property
    def sizes(self) -> list[int]:
        """Domain sizes of the table's columns."""
        return [self.nodes[i].size for i in self.columns]


def domain_sizes(attrs: int, rng: np.random.Generator) -> dict[str, list[int]]:
    """Domain sizes by role, drawn like a census extract: per 35 attributes one ~180-level, two
    ~100-level (a pair), eight 20-30-level and the rest 2-15-level attributes."""
    if attrs < 12:
        raise ValueError(f"a census-like table needs at least 12 attributes, got {attrs}")
    per = attrs / 35
    big, pairs, mid = max(1, round(per)), max(1, round(per)), max(4, round(8 * per))
    small = attrs - big - 2 * pairs - mid
    log_small = rng.uniform(np.log(2), np.log(15.99), small)
    return {
        "big": [int(s) for s in rng.integers(175, 186, big)],
        "hundred": [int(s) for s in rng.integers(92, 106, 2 * pairs)],
        "mid": [int(s) for s in rng.integers(20, 31, mid)],
        "small": [int(s) for s in np.floor(np.exp(log_small))],
    }


# -- conditional tables (rows: parent configurations, columns: the child's levels) -----------------


def dirichlet_table(rng: np.random.Generator, configs: int, size: int, concentration: float) -> np.ndarray:
    """Independent Dirichlet rows: small concentration = a few likely levels per configuration."""
    return rng.dirichlet(np.full(size, concentration), size=configs)


def coarse_table(rng: np.random.Generator, fine: int, coarse: int, purity: float) -> np.ndarray:
    """A coarse code of a detailed one: contiguous blocks of detailed levels map to one coarse
    level with probability ``purity``, anything else uniformly (coding noise)."""
    blocks = np.sort(np.concatenate([np.arange(coarse), rng.integers(0, coarse, max(0, fine - coarse))]))[:fine]
    table = np.full((fine, coarse), (1 - purity) / coarse)
    table[np.arange(fine), blocks] += purity
    return table


def shifted_table(rng: np.random.Generator, parent: int, size: int, spread: float) -> np.ndarray:
    """A child that follows its parent on a rescaled axis, plus a random offset and a discretized
    Laplace kernel of width ``spread`` (age and years at the address, two related place codes)."""
    centre = np.arange(parent) * (size - 1) / max(1, parent - 1) + rng.normal(0, spread / 2)
    table = np.exp(-np.abs(np.arange(size)[None, :] - centre[:, None]) / spread)
    return table / table.sum(axis=1, keepdims=True)


def amount_table(rng: np.random.Generator, size: int, zero_mass: float) -> np.ndarray:
    """A money amount in ``size`` bins (0 = none) given a hidden earning level: the zero mass falls
    with the level (about ``zero_mass`` overall), the amount's bin rises with it."""
    levels = np.arange(MONEY_LEVELS)
    zero = np.clip(zero_mass * 2 * (1 - levels / (MONEY_LEVELS - 1)) ** 1.5, 0.02, 0.98)
    centre = 1 + levels * (size - 2) / (MONEY_LEVELS - 1) + rng.normal(0, 1.0)
    spread = rng.uniform(1.0, 2.5)
    positive = np.exp(-np.abs(np.arange(1, size)[None, :] - centre[:, None]) / spread)
    positive /= positive.sum(axis=1, keepdims=True)
    return np.concatenate([zero[:, None], (1 - zero[:, None]) * positive], axis=1)


def flag_table(amount: int, size: int, purity: float) -> np.ndarray:
    """A small code of an amount: level 0 exactly when the amount is 0 (with probability ``purity``),
    the positive bins in contiguous blocks over the other levels (an "any income" flag when size 2)."""
    table = np.full((amount, size), (1 - purity) / size)
    blocks = 1 + np.arange(amount - 1) * (size - 1) // max(1, amount - 1)
    table[0, 0] += purity
    table[np.arange(1, amount), np.minimum(blocks, size - 1)] += purity
    return table


def _smooth_distribution(rng: np.random.Generator, size: int) -> np.ndarray:
    """A smooth, uneven distribution over ordered levels (an age pyramid)."""
    logits = np.cumsum(rng.normal(0, 0.15, size))
    weights = np.exp(logits - logits.max())
    return (weights / weights.sum())[None, :]


# -- the network ---------------------------------------------------------------------------------


class _Network:
    """Nodes added in topological order; each table's rows are checked against its parents."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[Node] = []

    def add(self, name: str, parents: list[int], table: np.ndarray) -> int:
        configs = int(np.prod([self.nodes[p].size for p in parents])) if parents else 1
        if table.shape[0] != configs:
            raise ValueError(f"{name}: {table.shape[0]} table rows for {configs} parent configurations")
        cdf = np.cumsum(table / table.sum(axis=1, keepdims=True), axis=1)
        cdf[:, -1] = 1.0
        self.nodes.append(Node(name, int(table.shape[1]), tuple(parents), cdf))
        return len(self.nodes) - 1

    def child(self, name: str, size: int, members: list[int], group_type: int) -> int:
        """A member that depends strongly on an earlier member (and on the group's type when the
        table stays small): a Dirichlet table of small concentration."""
        parent = members[int(self.rng.integers(0, len(members)))]
        parents = [parent, group_type]
        configs = self.nodes[parent].size * GROUP_TYPES
        if configs * size > MAX_TABLE_CELLS:
            parents, configs = [parent], self.nodes[parent].size
        return self.add(name, parents, dirichlet_table(self.rng, configs, size, self.rng.uniform(0.05, 0.3)))


def _code_group(net: _Network, z: int, band: int, big: int, coarse: int, smalls: list[int]) -> list[int]:
    """A detailed code (~180 levels) that depends on the group's type and the hub's band (occupation
    on age), its near-functional coarse code, and attributes depending on them."""
    rng = net.rng
    configs = GROUP_TYPES * net.nodes[band].size
    detailed = net.add("detailed", [z, band], dirichlet_table(rng, configs, big, 0.15))
    members = [detailed, net.add("coarse", [detailed], coarse_table(rng, big, coarse, rng.uniform(0.95, 0.99)))]
    for size in smalls:
        members.append(net.child("code-child", size, members, z))
    return members


def _pair_group(net: _Network, z: int, a: int, second: int, smalls: list[int]) -> list[int]:
    """A ~100-level attribute (node ``a``, already added), a second one that follows it, a
    near-functional band of the first and attributes depending on them."""
    rng = net.rng
    size_a = net.nodes[a].size
    members = [a, net.add("hundred-follower", [a], shifted_table(rng, size_a, second, rng.uniform(1.5, 3.0)))]
    members.append(net.add("band", [a], coarse_table(rng, size_a, smalls[0], rng.uniform(0.97, 0.995))))
    for size in smalls[1:]:
        members.append(net.child("pair-child", size, members, z))
    return members


def _money_group(net: _Network, z: int, code: int, amounts: list[int], smalls: list[int]) -> list[int]:
    """Money amounts with a large zero mass that move together (through a hidden earning level that
    depends on the group's type and on a coarse code, income on occupation), a small code of the
    first amount (0 = none) and attributes depending on them."""
    rng = net.rng
    configs = GROUP_TYPES * net.nodes[code].size
    level = net.add("earning-level", [z, code], dirichlet_table(rng, configs, MONEY_LEVELS, 0.4))
    members = [net.add("amount", [level], amount_table(rng, size, rng.uniform(0.45, 0.75))) for size in amounts]
    members.append(net.add("amount-flag", [members[0]], flag_table(amounts[0], smalls[0], 0.99)))
    for size in smalls[1:]:
        members.append(net.child("money-child", size, members, z))
    return members


def _plain_group(net: _Network, z: int, sizes: list[int]) -> list[int]:
    """A root that depends on the group's type and children that depend strongly on earlier members."""
    members = [net.add("root", [z], dirichlet_table(net.rng, GROUP_TYPES, sizes[0], 0.3))]
    for size in sizes[1:]:
        members.append(net.child("child", size, members, z))
    return members


def _take(pool: list[int], count: int) -> list[int]:
    """Remove and return up to ``count`` sizes from the end of ``pool``."""
    count = min(int(count), len(pool))
    taken = pool[len(pool) - count:]
    del pool[len(pool) - count:]
    return taken


def _plan_groups(sizes: dict[str, list[int]], rng: np.random.Generator) -> list[tuple[str, list[int], list[int]]]:
    """(kind, main sizes, extra sizes) per group: the ~100-level pairs (the first is the hub), the
    detailed codes, the money groups, then the remaining attributes in groups of 3-6."""
    mid, small = list(sizes["mid"]), list(sizes["small"])
    hundred = sizes["hundred"]
    plan = [("pair", hundred[i:i + 2], _take(small, rng.integers(1, 4))) for i in range(0, len(hundred), 2)]
    plan += [("code", [big, mid.pop()], _take(small, rng.integers(1, 4))) for big in sizes["big"]]
    plan += [("money", _take(mid, rng.integers(2, 4)), _take(small, rng.integers(1, 3))) for _ in sizes["big"]]
    rest = mid + small
    rng.shuffle(rest)
    while len(rest) > 6:
        count = min(int(rng.integers(3, 7)), len(rest) - 3)
        plan.append(("plain", [], _take(rest, count)))
    if len(rest) >= 3:
        plan.append(("plain", [], rest))
    else:  # one or two left: extra members of the last group
        plan[-1][2].extend(rest)
    return plan


def build_model(attrs: int, seed: int) -> CensusModel:
    """The census-like network of ``attrs`` columns drawn from ``seed`` (structure and tables)."""
    rng = np.random.default_rng([seed, 35])
    plan = _plan_groups(domain_sizes(attrs, rng), rng)
    net = _Network(rng)
    hub = net.add("hundred", [], _smooth_distribution(rng, plan[0][1][0]))
    top = net.add("global-type", [hub], dirichlet_table(rng, net.nodes[hub].size, GLOBAL_TYPES, 0.5))
    groups, kinds, bands, codes = [], [], [], []
    for k, (kind, main, extra) in enumerate(plan):
        z = net.add("group-type", [top], dirichlet_table(rng, GLOBAL_TYPES, GROUP_TYPES, 1.0))
        if kind == "pair":
            a = hub if k == 0 else net.add("hundred", [z], dirichlet_table(rng, GROUP_TYPES, main[0], 0.3))
            members = _pair_group(net, z, a, main[1], extra)
            bands.append(members[2])
        elif kind == "code":  # the k-th code group depends on the hub's band, the k-th money group on its coarse code
            members = _code_group(net, z, bands[0], main[0], main[1], extra)
            codes.append(members[1])
        elif kind == "money":
            members = _money_group(net, z, codes[kinds.count("money")], main, extra)
        else:
            members = _plain_group(net, z, extra)
        groups.append(members)
        kinds.append(kind)
    nodes = [node for members in groups for node in members]
    columns = tuple(nodes[i] for i in rng.permutation(len(nodes)))
    position = {node: col for col, node in enumerate(columns)}
    return CensusModel(tuple(net.nodes), columns, tuple(tuple(position[n] for n in g) for g in groups), tuple(kinds))


def _draw(cdf: np.ndarray, config: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws, row i from table row ``config[i]``: one search in the tables laid end to
    end, each shifted by its row number."""
    configs, size = cdf.shape
    flat = (cdf + np.arange(configs)[:, None]).ravel()
    found = np.searchsorted(flat, config + uniform, side="right") - config * size
    return np.minimum(found, size - 1)


def sample(model: CensusModel, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` rows drawn from ``model``: codes, one row per column (columns x rows, uint16)."""
    codes = np.empty((len(model.nodes), rows), dtype=np.uint16)
    for i, node in enumerate(model.nodes):
        config = np.zeros(rows, dtype=np.int64)
        for p in node.parents:
            config = config * model.nodes[p].size + codes[p]
        codes[i] = _draw(node.cdf, config, rng.random(rows))
    return codes[list(model.columns)]


def generate(attrs: int, rows: int, seed: int, chunk: int = CHUNK_ROWS) -> tuple[np.ndarray, list[int]]:
    """The seeded census-like table: codes (attrs x rows, uint16, sampled ``chunk`` rows at a time
    from one model) and domain sizes."""
    model = build_model(attrs, seed)
    rng = np.random.default_rng([seed, 36])
    codes = np.empty((attrs, rows), dtype=np.uint16)
    for start in range(0, rows, chunk):
        stop = min(rows, start + chunk)
        codes[:, start:stop] = sample(model, stop - start, rng)
    return codes, model.sizes

"""Generated tables that behave like census extracts (the wide configurations of `benchmarks.aim_scale`).

A real 35-attribute census extract has domains of 2-181 levels and groups of a few strongly
dependent attributes: a detailed and a coarse code of the same thing (occupation and its major
group; age and age band), money amounts with a large zero mass that move together, two ~100-level
attributes that follow each other (age and years at the address, place of birth and of work), a
"not applicable" level shared by everything that only concerns workers, and weaker links between
the groups (age shapes employment, income and household).

`build_model(attrs, seed)` draws such a structure and its conditional tables once, as a Bayesian
network over the table's attributes plus hidden variables: a global type and a work status (not in
the universe / not working / working) that depend on the first ~100-level attribute (the age-like
hub), one type per group that depends on the global type, and within each group a root that
depends on the group's type (and for the detailed codes, the money amounts and some groups on the
work status: level 0 = not applicable) and children that depend on earlier members
(near-functional codes, shifted copies, Dirichlet tables with small concentration). Domains follow
the extract: per 35 attributes one of ~180 levels, two of ~100, eight of 20-30 and the rest 2-15.
`sample(model, rows, rng)` draws rows from a model (vectorized, one pass per attribute), so a large
table is generated in chunks from one model; `generate(attrs, rows, seed)` is the seeded table of
`aim_scale`'s configurations.
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
#: Dirichlet concentrations of the global type given the hub and of each group's type given the
#: global type: smaller = stronger links between the groups
HUB_COUPLING, GROUP_COUPLING = 0.4, 0.5


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


def status_table(age: int, rng: np.random.Generator) -> np.ndarray:
    """A hidden work status given the age-like hub: 0 = not in the universe (the youngest levels),
    1 = not working, 2 = working (most likely at middle levels)."""
    t = np.arange(age) / max(1, age - 1)
    young = 1 / (1 + np.exp((t - rng.uniform(0.12, 0.2)) / 0.01))
    working = (1 - young) * 0.9 * np.exp(-(((t - 0.42) / 0.3) ** 2))
    return np.stack([young, 1 - young - working, working], axis=1)


def gated_table(inner: np.ndarray, purity: float = 0.97) -> np.ndarray:
    """``inner`` with the work status as a last parent: outside "working" the level 0 (not
    applicable) with probability ``purity``; working, level 0 is rare."""
    applicable = inner.copy()
    applicable[:, 0] *= 0.05
    applicable /= applicable.sum(axis=1, keepdims=True)
    not_applicable = (1 - purity) * inner
    not_applicable[:, 0] += purity
    return np.stack([not_applicable, not_applicable, applicable], axis=1).reshape(-1, inner.shape[1])


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


def _code_group(net: _Network, z: int, status: int, big: int, coarse: int, smalls: list[int]) -> list[int]:
    """A detailed code (~180 levels, 0 = not applicable unless working), its near-functional coarse
    code (0 exactly for 0), and attributes depending on them."""
    rng = net.rng
    detailed = net.add("detailed", [z, status], gated_table(dirichlet_table(rng, GROUP_TYPES, big, 0.15)))
    table = np.zeros((big, coarse))
    table[0, 0] = 1.0
    table[1:, 1:] = coarse_table(rng, big - 1, coarse - 1, rng.uniform(0.95, 0.99))
    members = [detailed, net.add("coarse", [detailed], table)]
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
    code_size = net.nodes[code].size
    table = dirichlet_table(rng, GROUP_TYPES * code_size, MONEY_LEVELS, 0.4)
    table[::code_size] = np.r_[0.9, np.full(MONEY_LEVELS - 1, 0.1 / (MONEY_LEVELS - 1))]  # no occupation: low
    level = net.add("earning-level", [z, code], table)
    members = [net.add("amount", [level], amount_table(rng, size, rng.uniform(0.45, 0.75))) for size in amounts]
    members.append(net.add("amount-flag", [members[0]], flag_table(amounts[0], smalls[0], 0.99)))
    for size in smalls[1:]:
        members.append(net.child("money-child", size, members, z))
    return members


def _plain_group(net: _Network, z: int, status: int | None, sizes: list[int]) -> list[int]:
    """A root that depends on the group's type (and the work status when given: 0 = not applicable)
    and children that depend strongly on earlier members."""
    table = dirichlet_table(net.rng, GROUP_TYPES, sizes[0], 0.3)
    members = [net.add("root", [z], table) if status is None else net.add("root", [z, status], gated_table(table))]
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
    top = net.add("global-type", [hub], dirichlet_table(rng, net.nodes[hub].size, GLOBAL_TYPES, HUB_COUPLING))
    status = net.add("work-status", [hub], status_table(net.nodes[hub].size, rng))
    groups, kinds, codes = [], [], []
    for k, (kind, main, extra) in enumerate(plan):
        z = net.add("group-type", [top], dirichlet_table(rng, GLOBAL_TYPES, GROUP_TYPES, GROUP_COUPLING))
        if kind == "pair":
            table = gated_table(dirichlet_table(rng, GROUP_TYPES, main[0], 0.3))
            a = hub if k == 0 else net.add("hundred", [z, status], table)
            members = _pair_group(net, z, a, main[1], extra)
        elif kind == "code":  # the k-th money group depends on the k-th code group's coarse code
            members = _code_group(net, z, status, main[0], main[1], extra)
            codes.append(members[1])
        elif kind == "money":
            members = _money_group(net, z, codes[kinds.count("money")], main, extra)
        else:
            members = _plain_group(net, z, status if rng.random() < 0.5 else None, extra)
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

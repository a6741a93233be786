"""G's greedy elimination trace restricted to some of its connected components, for
`aim.size_filter.SizeFilter`'s replays: greedy elimination never mixes components, so their steps
keep G's relative order and a replay there only waits for their own attributes."""

from __future__ import annotations


class PartTrace:
    """G's elimination trace restricted to a set of its components (greedy elimination never mixes
    components, so their steps keep G's relative order): the attributes eliminated, the global
    step of each, their cliques, the counted cells before each step and the attributes left."""

    def __init__(self, sf, merged: int) -> None:
        """``sf``: the `SizeFilter` holding G's trace; ``merged``: the components, as an attribute bitmask."""
        self.sf = sf
        self.glob = [k for k, v in enumerate(sf.order) if merged >> v & 1]
        self.order = [sf.order[k] for k in self.glob]
        self.cliques = [sf.cliques[k] for k in self.glob]
        self.prefix = [0]
        for k in self.glob:  # a clique is never inside another component's: G's counting holds
            self.prefix.append(self.prefix[-1] + sf.prefix[k + 1] - sf.prefix[k])
        self.alive_masks = [sf.alive_masks[k] & merged for k in self.glob] + [0]
        self.position = {v: j for j, v in enumerate(self.order)}
        self.merged = merged
        self.seps_at: dict[int, frozenset[int]] = {}
        self._ranked: dict[int, list[int]] = {}

    def ranked(self, k: int) -> list[int]:
        """The attributes of these components left before step k, by G's key then index."""
        found = self._ranked.get(k)
        if found is None:
            merged = self.merged
            found = self._ranked[k] = [u for u in self.sf.ranked[self.glob[k]] if merged >> u & 1]
        return found

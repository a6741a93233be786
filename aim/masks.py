"""Attribute sets as int bitmasks (bit i = the domain's attribute i), memoised: the size filter asks
about the same cliques, candidates and neighbourhoods in every round."""

from __future__ import annotations

from typing import Sequence

from marginals.domain import Domain

BITS: dict[int, tuple[int, ...]] = {}  # the set bits of a mask (memoized: masks recur endlessly)


def bits(mask: int) -> tuple[int, ...]:
    """The set bits of ``mask``, in increasing order."""
    found = BITS.get(mask)
    if found is None:
        if len(BITS) > 100_000:
            BITS.clear()
        found = BITS[mask] = tuple(i for i in range(mask.bit_length()) if mask >> i & 1)
    return found


_BIT_OF: dict[Domain, dict[str, int]] = {}  # attribute -> bit, per domain
_MASKS: dict[tuple, int] = {}  # (id of an `_index` map, attributes) -> bitmask: cliques and candidates recur every round


def attribute_bits(domain: Domain) -> dict[str, int]:
    """Attribute -> its bit, per domain (memoised)."""
    found = _BIT_OF.get(domain)
    if found is None:
        if len(_BIT_OF) > 64:
            _BIT_OF.clear()
            _MASKS.clear()  # keyed by the maps' ids: never outlive them
        found = _BIT_OF[domain] = {a: i for i, a in enumerate(domain.attrs)}
    return found


def mask(index: dict[str, int], attrs: Sequence[str]) -> int:
    """The bitmask of ``attrs`` under an `attribute_bits` map (memoised)."""
    key = (id(index), tuple(attrs))
    found = _MASKS.get(key)
    if found is not None:
        return found
    out = 0
    for a in attrs:
        out |= 1 << index[a]
    if len(_MASKS) > 200_000:
        _MASKS.clear()
    _MASKS[key] = out
    return out


def graph(index: dict[str, int], cliques: Sequence[Sequence[str]]) -> list[int]:
    """The interaction graph of ``cliques``: per attribute, the bitmask of its neighbours."""
    adj = [0] * len(index)
    for clique in cliques:
        m = mask(index, clique)
        for i in bits(m):
            adj[i] |= m & ~(1 << i)
    return adj

"""Where every random draw comes from: one convention for the whole engine.

Noise that is published (measurements, selections, every baseline's perturbation) is drawn from
a `RandomSource`:

- `SecureRandom` (the default everywhere): bytes from the operating system's cryptographically
  secure generator (``os.urandom`` / ``secrets``). There is no seed and no state to store, so no
  file we write can let anyone replay the noise.
- `InsecureRandom(seed)`: numpy's PCG64 from a seed, for tests and benchmarks only. Anyone who
  knows or guesses the seed can subtract the noise, so constructing one warns
  (`InsecureSeedWarning`) and a mechanism run on it marks its output ``private = False``.

Both derive every distribution from uniform 64-bit words (`uint64`), so the exact samplers in
`marginals.exact` consume the same kind of randomness in both modes.

Post-processing of public output (synthetic rows sampled from a released model) may use an
ordinary seeded ``numpy.random.Generator`` (`sampling_rng`): it reveals nothing beyond the model.

The two conventions, the same in every package:

- published noise: a parameter typed `NoiseSource` (``RandomSource | int | None``), resolved by
  `noise_source` — None is `SecureRandom`; an int or an `InsecureRandom` is replayable and marks
  the output not private (``rng`` in `marginals.mechanisms`, ``insecure_seed`` in AIM,
  ``random_state`` in the DD-SSP baselines);
- post-processing samplers: a parameter ``rng`` typed `SamplingSeed` (``Generator | int | None``),
  resolved by `sampling_rng` — None is fresh OS entropy, an int or a Generator is reproducible
  (`pgm.Model.synthetic_data`, `pgm.sampling.sample_rows`, `aim.Release.synthetic_data`).
"""

from __future__ import annotations

import os
import secrets
import warnings
from typing import Any

import numpy as np
from scipy.special import ndtri

_TWO53 = float(2**53)


class InsecureSeedWarning(UserWarning):
    """A seeded (replayable) noise source is in use: its output is not differentially private."""


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed as a non-negative int; bools, floats, strings and negatives are refused."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{name} must be a non-negative integer, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed}")
    return int(seed)


class RandomSource:
    """Uniform 64-bit words plus the distributions built on them (a subset of numpy's Generator API)."""

    #: True when nobody can replay the draws (the output of a mechanism on it may be published).
    private: bool = True

    def uint64(self, size: int) -> np.ndarray:
        """``size`` independent uniform 64-bit words."""
        raise NotImplementedError

    def randbelow(self, n: int) -> int:
        """A uniform Python int in [0, n) for any n >= 1 (arbitrary precision)."""
        raise NotImplementedError

    def below(self, n: int | np.ndarray, size: int | None = None) -> np.ndarray:
        """Exact uniform integers in [0, n) (n <= 2**63, scalar or array) by rejection; int64."""
        if np.ndim(n) == 0:  # one bound: plain integer threshold, no broadcasting
            bound = int(n)
            if not 1 <= bound <= 2**63:
                raise ValueError(f"below: n must lie in [1, 2**63], got {bound}")
            count = 1 if size is None else int(size)
            words = self.uint64(count)
            threshold = np.uint64(2**64 % bound)
            ok = words >= threshold
            while not ok.all():
                bad = np.flatnonzero(~ok)
                words[bad] = self.uint64(bad.size)
                ok[bad] = words[bad] >= threshold
            out = (words % np.uint64(bound)).astype(np.int64)
            return out if size is not None else out.reshape(())
        n = np.asarray(n, dtype=np.uint64)
        shape = n.shape if size is None else (size,)
        n = n.ravel() if size is None else np.broadcast_to(n, shape).ravel()
        if n.size and int(n.min()) < 1:
            raise ValueError("below: n must be >= 1")
        threshold = (np.uint64(0) - n) % n  # 2**64 mod n: words below it would bias the remainder
        words = self.uint64(n.size)  # the first pass covers every element (no index arrays)
        out = words % n
        todo = np.flatnonzero(words < threshold)
        while todo.size:  # redraw the rejected ones, in order
            words = self.uint64(todo.size)
            ok = words >= threshold[todo]
            out[todo[ok]] = words[ok] % n[todo[ok]]
            todo = todo[~ok]
        return out.astype(np.int64).reshape(shape)

    def random(self, size: int | tuple | None = None) -> np.ndarray | float:
        """Uniform floats on [0, 1) with 53 random bits each."""
        count = int(np.prod(size)) if size is not None else 1
        values = (self.uint64(count) >> np.uint64(11)).astype(np.float64) / _TWO53
        return float(values[0]) if size is None else values.reshape(size)

    def _open_uniform(self, size) -> np.ndarray:
        count = int(np.prod(size)) if size is not None else 1
        values = ((self.uint64(count) >> np.uint64(11)).astype(np.float64) + 0.5) / _TWO53
        return values.reshape(() if size is None else size)

    def standard_normal(self, size: int | tuple | None = None) -> np.ndarray | float:
        """Standard normal draws by inversion of a 53-bit uniform on (0, 1) (|z| <= 8.3)."""
        z = ndtri(self._open_uniform(size))
        return float(z) if size is None else z

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: int | tuple | None = None):
        """Normal draws N(loc, scale^2)."""
        return loc + scale * self.standard_normal(size)

    def exponential(self, scale: float = 1.0, size: int | tuple | None = None):
        """Exponential draws with mean ``scale``."""
        e = -np.log(self._open_uniform(size))
        return scale * (float(e) if size is None else e)

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: int | tuple | None = None):
        """Laplace draws: a random sign times an exponential."""
        count = int(np.prod(size)) if size is not None else 1
        sign = np.where(self.below(2, count) == 1, 1.0, -1.0).reshape(() if size is None else size)
        e = -np.log(self._open_uniform(size))
        out = loc + scale * sign * e
        return float(out) if size is None else out

    def uniform(self, low: float = 0.0, high: float = 1.0, size: int | tuple | None = None):
        """Uniform draws on [low, high)."""
        return low + (high - low) * self.random(size)

    def integers(self, low: int, high: int | None = None, size: int | None = None):
        """Uniform integers in [low, high) (numpy's convention; ``integers(n)`` is [0, n))."""
        if high is None:
            low, high = 0, low
        if not high > low:
            raise ValueError(f"integers: need high > low, got [{low}, {high})")
        draws = low + self.below(high - low, 1 if size is None else size)
        return int(draws[0]) if size is None else draws

    def permutation(self, x: int | np.ndarray) -> np.ndarray:
        """A uniformly random permutation of range(x) or of the array ``x``.

        Sorting by independent uniform 64-bit keys is uniform once the keys are distinct; a draw
        with a tie (probability about n^2 / 2^65) is redrawn, so the result is exactly uniform.
        """
        items = np.arange(x) if isinstance(x, (int, np.integer)) else np.asarray(x)
        while True:
            keys = self.uint64(len(items))
            order = np.argsort(keys, kind="stable")
            if len(items) < 2 or np.all(np.diff(keys[order]) > 0):
                return items[order]


class SecureRandom(RandomSource):
    """Draws from ``os.urandom``: not seedable, nothing to store, nothing to replay."""

    private = True
    _CHUNK = 1 << 14  # words fetched per system call for small requests

    def __init__(self) -> None:
        self._buffer = np.empty(0, dtype=np.uint64)

    def uint64(self, size: int) -> np.ndarray:
        size = int(size)
        if size > self._CHUNK:
            return np.frombuffer(os.urandom(8 * size), dtype=np.uint64).copy()
        if size > self._buffer.size:  # words are used once: the unused rest is dropped, not reused
            self._buffer = np.frombuffer(os.urandom(8 * self._CHUNK), dtype=np.uint64)
        words, self._buffer = self._buffer[:size].copy(), self._buffer[size:]
        return words

    def randbelow(self, n: int) -> int:
        return secrets.randbelow(int(n))

    def __repr__(self) -> str:
        return "SecureRandom()"


class InsecureRandom(RandomSource):
    """Seeded PCG64 draws for tests and benchmarks: replayable, so output on it is NOT private."""

    private = False

    def __init__(self, seed: int, warn: bool = True) -> None:
        self._generator = np.random.default_rng(check_seed(seed, "insecure_seed"))
        if warn:
            warnings.warn(
                "a seeded noise source is in use: anyone who knows or guesses the seed can undo the noise; "
                "the output is marked not private (tests and benchmarks only)",
                InsecureSeedWarning,
                stacklevel=2,
            )

    def uint64(self, size: int) -> np.ndarray:
        # the bit generator's raw words: the same words as integers(0, 2**64, dtype=uint64), 10x cheaper per call
        return self._generator.bit_generator.random_raw(int(size))

    def randbelow(self, n: int) -> int:
        n = int(n)
        bits = n.bit_length()
        while True:
            word = int.from_bytes(self._generator.bytes((bits + 7) // 8), "little") >> (-bits % 8)
            if word < n:
                return word

    def __repr__(self) -> str:
        return "InsecureRandom(<seed withheld>)"


#: What a mechanism accepts for its published noise (resolved by `noise_source`).
NoiseSource = RandomSource | int | None
#: What a post-processing sampler accepts for its randomness (resolved by `sampling_rng`).
SamplingSeed = np.random.Generator | int | None


def noise_source(source: NoiseSource = None, name: str = "insecure_seed") -> RandomSource:
    """The noise source for a mechanism: None -> `SecureRandom`; an int -> `InsecureRandom` (warns).

    ``name`` is the caller's parameter name, used in error messages.
    """
    if source is None:
        return SecureRandom()
    if isinstance(source, RandomSource):
        return source
    if isinstance(source, np.random.Generator):
        raise TypeError(
            "published noise is never drawn from a numpy Generator: pass None (secure, the default) or, "
            "for tests only, an int insecure seed / marginals.InsecureRandom(seed)"
        )
    return InsecureRandom(check_seed(source, name), warn=True)


def sampling_rng(seed: SamplingSeed = None, name: str = "seed") -> np.random.Generator:
    """A Generator for post-processing (synthetic rows): a given one, an int seed, or fresh OS entropy.

    A `RandomSource` is refused: it is for published noise, and samplers need numpy's Generator API.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, RandomSource):
        raise TypeError(f"{name}: a RandomSource is for published noise; sampling takes a numpy Generator, an int seed or None")
    return np.random.default_rng(check_seed(seed, name))

"""The seed-replay attack, run as an attacker who holds a release file that `dp-marginals synth`
wrote with its defaults: replaying seeded noise streams must not give back the private counts.

AIM measures every 1-way marginal first, before any selection draws, so the noise of those
measurements is a function of the seed and of public facts (sigma, sizes, order) only. An
attacker replays, for each candidate seed, (a) numpy's float Gaussian stream (what the engine
used to draw) and (b) this engine's own seeded exact sampler, subtracts it from the published
counts, and checks whether the result is the private table. A positive control shows the attack
works on a release made with ``--insecure-seed``.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from aim import NotPrivateWarning, Release
from ddssp.cli import main
from marginals import InsecureRandom
from marginals.datasets import demo_dataset
from marginals.exact import discrete_gaussian, noise_variance

SEEDS = range(0, 1001)


@pytest.fixture(scope="module")
def private_table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("private")
    data = demo_dataset(n=1500, seed=9)
    data.to_df().to_csv(folder / "private.csv", index=False)
    data.domain.save(folder / "domain.json")
    return folder, data


def _synth(folder, name: str, *extra: str) -> Release:
    out = folder / name
    argv = ["synth", "--data", str(folder / "private.csv"), "--domain", str(folder / "domain.json"),
            "--out", str(out.with_suffix(".csv")), "--release", str(out.with_suffix(".npz")), "--quiet", *extra]
    assert main(argv) == 0
    return out.with_suffix(".npz")


def _header(path) -> dict:
    with np.load(path, allow_pickle=False) as npz:
        return json.loads(str(npz["header"]))


def _numbers_in(header: dict) -> set[int]:
    """Every non-negative integer literal in the header: candidate seeds an attacker would try."""
    return {int(v) for v in re.findall(r"(?<![\w.])\d{1,12}(?![\w.])", json.dumps(header))}


def _replay_recovers(release: Release, truth: list[np.ndarray], seed: int) -> tuple[bool, bool]:
    """(float replay recovered a table or gave integers, exact replay recovered a table) for ``seed``,
    replaying the streams through the first ``len(truth)`` measurements (the right seed matches the first)."""
    init = release.measurements[: len(truth)]
    float_rng = np.random.default_rng(seed)
    exact_rng = InsecureRandom(seed, warn=False)
    float_hit = exact_hit = False
    for m, true in zip(init, truth):
        noisy = m.noisy_counts.ravel()
        recovered_float = noisy - float_rng.normal(0.0, m.sigma, size=noisy.size)
        float_hit |= bool(np.array_equal(recovered_float, np.rint(recovered_float)))
        float_hit |= bool(np.array_equal(recovered_float, true.ravel()))
        noise = discrete_gaussian(exact_rng, noise_variance(m.sigma), noisy.size)
        exact_hit |= bool(np.array_equal(noisy - noise, true.ravel()))
    return float_hit, exact_hit


def test_default_synth_release_resists_seed_replay(private_table):
    folder, data = private_table
    path = _synth(folder, "default")
    header = _header(path)
    release = Release.load(path)
    assert release.private is True and header["private"] is True
    truth = data.marginals([m.clique for m in release.measurements])
    # the published counts are integers (exact sampler) and none equals its private table
    for m, true in zip(release.measurements, truth):
        assert np.array_equal(m.noisy_counts, np.rint(m.noisy_counts))
        assert not np.array_equal(m.noisy_counts, true)
    candidates = sorted(set(SEEDS) | _numbers_in(header))
    for seed in candidates:
        float_hit, exact_hit = _replay_recovers(release, truth[:1], seed)
        assert not float_hit, seed
        assert not exact_hit, seed


def test_replay_attack_has_power_on_a_seeded_release(private_table):
    """Positive control: the same attack undoes a release made with --insecure-seed."""
    folder, data = private_table
    with pytest.warns(NotPrivateWarning, match="NOT differentially private"):
        release = Release.load(_synth(folder, "seeded", "--insecure-seed", "417"))
    assert release.private is False
    truth = data.marginals([m.clique for m in release.measurements[: len(release.domain)]])
    assert _replay_recovers(release, truth, 417) == (False, True)


def _keys(obj) -> list[str]:
    if isinstance(obj, dict):
        return [k for k in obj] + [k for v in obj.values() for k in _keys(v)]
    if isinstance(obj, list):
        return [k for v in obj for k in _keys(v)]
    return []


def test_no_release_header_contains_a_seed(private_table):
    folder, _ = private_table
    for name, extra in [("plain", ()), ("seeded-no-store", ("--insecure-seed", "98765431"))]:
        header = _header(_synth(folder, name, *extra))
        assert not [k for k in _keys(header) if "seed" in k.lower() or "rng" in k.lower() or "state" in k.lower()]
        assert "98765431" not in json.dumps(header)
        assert header["private"] is (name == "plain")

"""Conventions shared across packages: one (epsilon, delta) validator, one home for the
measurement record, and the same randomness parameters for every sampler and mechanism."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import marginals
import marginals.mechanisms
import marginals.measurement
from aim import AIMConfig, Release
from marginals import Accountant, Domain, cdp_rho, check_epsilon_delta, gdp_mu
from marginals.mechanisms import exponential_mechanism, measure_counts
from marginals.randomness import InsecureRandom, InsecureSeedWarning, SecureRandom, noise_source
from pgm import Model, sample_rows

ROOT = Path(__file__).resolve().parent.parent


# --- one validator per concept -------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, math.inf, 1e101, "1"])
def test_every_budget_taker_reports_a_bad_epsilon_the_same_way(epsilon):
    def message(call):
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        return str(info.value)

    if isinstance(epsilon, str):  # float("1") is accepted by float(); the check is on the value
        assert check_epsilon_delta(epsilon, 1e-9) == (1.0, 1e-9)
        return
    expected = message(lambda: check_epsilon_delta(epsilon, 1e-9))
    assert "epsilon" in expected
    assert message(lambda: cdp_rho(epsilon, 1e-9)) == expected
    assert message(lambda: gdp_mu(epsilon, 1e-9)) == expected
    assert message(lambda: AIMConfig(epsilon)) == expected
    assert message(lambda: Accountant(1.0).exponential(epsilon)) == expected


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-9, math.nan])
def test_every_budget_taker_reports_a_bad_delta_the_same_way(delta):
    with pytest.raises(ValueError) as info:
        check_epsilon_delta(1.0, delta)
    expected = str(info.value)
    assert "delta" in expected
    for call in (lambda: cdp_rho(1.0, delta), lambda: gdp_mu(1.0, delta), lambda: AIMConfig(1.0, delta),
                 lambda: Accountant(1.0, delta=delta)):
        with pytest.raises(ValueError) as other:
            call()
        assert str(other.value) == expected


def test_measurement_has_one_home_and_pgm_imports_only_the_vocabulary():
    assert marginals.Measurement is marginals.measurement.Measurement
    assert "Measurement" not in marginals.mechanisms.__all__  # no re-export: one import path, checked below
    for package in ("marginals", "pgm", "aim", "ddssp", "tests", "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and any(alias.name == "Measurement" for alias in node.names):
                    home = ("measurement",) if node.level else ("marginals", "marginals.measurement")
                    assert node.module in home, (path, node.module)
    vocabulary = {"marginals.domain", "marginals.measurement", "marginals.randomness"}  # nothing that reads rows
    for path in sorted((ROOT / "pgm").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("marginals"):
                assert node.module in vocabulary, (path.name, node.module)
            if isinstance(node, ast.Import):
                assert all(not alias.name.startswith("marginals") for alias in node.names), path.name


# --- randomness: published noise vs post-processing ----------------------------------------------


@pytest.fixture(scope="module")
def model():
    dom = Domain(("a", "b", "c"), (3, 2, 4))
    rng = np.random.default_rng(0)
    cliques = [("a", "b"), ("b", "c")]
    return Model(dom, cliques, [rng.normal(size=dom.project(c).shape) for c in cliques], total=300.0)


def test_every_sampler_takes_a_generator_a_seed_or_none(model):
    release = Release(model.domain, [], model, Accountant(1.0))
    samplers = {
        "model": lambda n, rng: model.synthetic_data(n, rng),
        "rows": lambda n, rng: sample_rows(model, n, rng),
        "release": lambda n, rng: release.synthetic_data(n, rng),
        "view": lambda n, rng: release.without(["c"]).synthetic_data(n, rng),
    }
    reference = model.synthetic_data(500, np.random.default_rng(7))
    for name, sample in samplers.items():
        by_seed = sample(500, 7)
        by_generator = sample(500, np.random.default_rng(7))
        expected = reference.drop(columns=["c"]) if name == "view" else reference
        assert by_seed.equals(expected) and by_generator.equals(expected), name
        assert len(sample(None, None)) == 300, name  # None: fresh entropy, default n = round(total)
        with pytest.raises(TypeError, match="RandomSource"):
            sample(10, InsecureRandom(1, warn=False))  # published-noise sources are not samplers
        with pytest.raises(TypeError):
            sample(10, 1.5)


def test_every_mechanism_takes_a_noise_source_an_insecure_seed_or_none():
    counts = np.array([5.0, 7.0, 1.0])
    assert isinstance(noise_source(None), SecureRandom)
    with pytest.raises(TypeError, match="numpy Generator"):
        noise_source(np.random.default_rng(0))
    for rng in (None, InsecureRandom(3, warn=False)):
        m = measure_counts(counts, ("a",), 2.0, rng, Accountant(1.0))
        assert m.noisy_counts.shape == (3,)
        assert 0 <= exponential_mechanism([1.0, 2.0], 0.5, 1.0, rng, Accountant(1.0)) <= 1
    with pytest.warns(InsecureSeedWarning):
        a = measure_counts(counts, ("a",), 2.0, 11, Accountant(1.0))
    with pytest.warns(InsecureSeedWarning):
        b = measure_counts(counts, ("a",), 2.0, 11, Accountant(1.0))
    np.testing.assert_array_equal(a.noisy_counts, b.noisy_counts)  # an int seed replays the noise

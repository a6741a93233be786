"""`AIMConfig`: validated once when built, serialised into the release from its own fields (never
the seed), parsed back from a release, and the same run again from the parsed configuration."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from aim import AIM, AIMConfig, Release
from aim.config import ESTIMATOR_OPTIONS
from marginals.datasets import demo_dataset

#: the keys of a release's mechanism config part (`aim.release_config`; the flat config of format
#: versions 2 and 3 held the same, with the name under "mechanism").
MECHANISM_KEYS = {
    "name", "epsilon", "delta", "max_model_size", "max_iters", "tol", "round_work", "min_iters", "final_iters",
    "final_tol", "final_work", "rounds", "max_cells", "loss_weight", "estimator_options", "anneal_iters",
    "exact_noise", "workload",
}
SEED = 918_273_645  # distinctive: easy to find in a file if it ever leaked


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(epsilon=float("nan")), ValueError, "epsilon"),
        (dict(epsilon=1.0, delta=1.0), ValueError, "delta"),
        (dict(epsilon=1.0, max_model_size=0.0), ValueError, "max_model_size"),
        (dict(epsilon=1.0, max_model_size=float("inf")), ValueError, "max_model_size"),
        (dict(epsilon=1.0, max_iters=-1), ValueError, "max_iters"),
        (dict(epsilon=1.0, max_iters=2.5), TypeError, "max_iters"),
        (dict(epsilon=1.0, min_iters=True), TypeError, "min_iters"),
        (dict(epsilon=1.0, tol=-1e-3), ValueError, "tol"),
        (dict(epsilon=1.0, final_tol="small"), TypeError, "final_tol"),
        (dict(epsilon=1.0, round_work=0), ValueError, "round_work"),
        (dict(epsilon=1.0, final_work=-1.0), ValueError, "final_work"),
        (dict(epsilon=1.0, rounds=0), ValueError, "rounds"),
        (dict(epsilon=1.0, max_cells=0), ValueError, "max_cells"),
        (dict(epsilon=1.0, loss_weight="inverse"), ValueError, "loss_weight"),
        (dict(epsilon=1.0, estimator_options={"iters": 5}), ValueError, "estimator_options"),
        (dict(epsilon=1.0, anneal_iters=-2), ValueError, "anneal_iters"),
        (dict(epsilon=1.0, exact_noise=0), TypeError, "exact_noise"),
        (dict(epsilon=1.0, exact_noise=False), ValueError, "insecure_seed"),
        (dict(epsilon=1.0, insecure_seed=-3), ValueError, "insecure_seed"),
        (dict(epsilon=1.0, workload=[]), ValueError, "workload"),
        (dict(epsilon=1.0, workload=[(("a", "b"), 0.0)]), ValueError, "weight"),
        (dict(epsilon=1.0, workload=["ab"]), ValueError, "string"),
    ],
)
def test_bad_hyperparameters_are_refused_when_built(kwargs, error, name):
    with pytest.raises(error, match=name):
        AIMConfig(**kwargs)
    epsilon = kwargs.pop("epsilon")
    with pytest.raises(error, match=name):
        AIM(epsilon, **kwargs)  # the same check, before any data is seen


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="max_iter"):
        AIM(1.0, max_iter=5)


def test_aim_keyword_signature_builds_the_config():
    aim = AIM(2.0, 1e-6, max_iters=7, workload=[("a", "b")], estimator_options={"momentum": 0.0}, insecure_seed=3)
    cfg = aim.config
    assert (cfg.epsilon, cfg.delta, cfg.max_iters, cfg.insecure_seed) == (2.0, 1e-6, 7, 3)
    assert cfg.workload == ((("a", "b"), 1.0),)
    assert cfg.estimator_options == {"momentum": 0.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.epsilon = 3.0
    assert AIM.from_config(cfg).config is cfg
    with pytest.raises(TypeError, match="AIMConfig"):
        AIM.from_config(cfg.to_dict())
    assert AIM(1.0).config == AIMConfig(1.0)  # one set of defaults


def test_to_dict_is_the_fields_without_the_seed():
    cfg = AIMConfig(1.0, workload=[(("a", "b"), 2.0), ("b", "c")], insecure_seed=SEED)
    data = cfg.to_dict()
    assert set(data) == MECHANISM_KEYS and data["name"] == "AIM"
    assert data["workload"] == [[["a", "b"], 2.0], [["b", "c"], 1.0]]
    text = json.dumps(data)
    assert str(SEED) not in text and "seed" not in text
    assert str(SEED) not in repr(cfg)
    assert AIMConfig.from_dict(json.loads(text)) == dataclasses.replace(cfg, insecure_seed=None)
    assert AIMConfig.from_dict(json.loads(text), insecure_seed=SEED) == cfg
    assert set(ESTIMATOR_OPTIONS) == {"stepsize", "step_growth", "armijo", "momentum", "resume_stepsize"}


def test_from_dict_refuses_what_it_cannot_rebuild():
    data = AIMConfig(1.0).to_dict()
    with pytest.raises(ValueError, match="mechanism name 'MST'"):
        AIMConfig.from_dict({**data, "name": "MST"})
    with pytest.raises(ValueError, match="unknown"):  # the flat config of format versions 2 and 3 (see aim.release_config)
        AIMConfig.from_dict({**data, "spec_rho": 0.1})
    with pytest.raises(ValueError, match="insecure_seed"):
        AIMConfig.from_dict({**data, "insecure_seed": 4})
    with pytest.raises(ValueError, match="unknown"):
        AIMConfig.from_dict({**data, "seed": 4})
    with pytest.raises(ValueError, match="epsilon"):
        AIMConfig.from_dict({k: v for k, v in data.items() if k != "epsilon"})
    with pytest.raises(ValueError, match="insecure_seed"):  # float noise needs the seed given again
        AIMConfig.from_dict({**data, "exact_noise": False})
    with pytest.raises(TypeError, match="mapping"):
        AIMConfig.from_dict([("epsilon", 1.0)])


def test_release_config_round_trip_reproduces_the_run(tmp_path):
    data = demo_dataset(n=600, seed=2)
    aim = AIM(1.0, 1e-9, max_iters=5, final_iters=5, max_cells=200, insecure_seed=SEED)
    release = aim.run(data)
    release.save(tmp_path / "r.npz")
    raw = (tmp_path / "r.npz").read_bytes()
    assert str(SEED).encode() not in raw
    with pytest.warns(UserWarning, match="seeded"):
        loaded = Release.load(tmp_path / "r.npz")
    assert loaded.private is False
    parsed = loaded.mechanism_config(insecure_seed=SEED)
    assert parsed == AIMConfig.from_dict(loaded.config["mechanism"], insecure_seed=SEED)
    # the stored workload is the resolved one (the default 2-way workload under max_cells)
    assert parsed.workload is not None and all(len(c) == 2 for c, _ in parsed.workload)
    assert dataclasses.replace(parsed, workload=None) == aim.config
    again = AIM.from_config(parsed).run(data)
    assert again.rounds == release.rounds
    for a, b in zip(again.measurements, release.measurements):
        assert a.clique == b.clique
        np.testing.assert_array_equal(a.noisy_counts, b.noisy_counts)
    assert math.isclose(again.model.total, release.model.total, rel_tol=0, abs_tol=0)

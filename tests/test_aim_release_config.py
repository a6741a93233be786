"""A release's typed configuration (`aim.release_config`): one part per writer (the mechanism's
`AIMConfig`, a raw run's `SpecConfig`), typed readers, strict checks of the parts in memory and in
files, and the flat configuration of format versions 2 and 3 read back in parts.

The two files under ``tests/data`` were written by the previous version (format 3, flat config),
from its checkout, with insecure seeds:

    AIM(1.0, 1e-9, max_iters=5, final_iters=5, max_cells=200, insecure_seed=11).run(demo_dataset(n=400, seed=5))
    synthesize(raw, epsilon=2.0, delta=1e-6, insecure_seed=4, rounds=6, max_iters=5, final_iters=10)

where ``raw`` is `raw_table` below (600 rows of age, job, paid).
"""

from __future__ import annotations

import dataclasses
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aim import AIM, AIMConfig, Release, ReleaseFormatError, synthesize
from aim.raw import SPEC_SHARE
from aim.release_config import SpecConfig, build_config, check_config, from_flat
from aim.storage import VERSION
from ddssp import DDSSPLinearRegression
from ddssp.bayes.resampling import rerun_config
from ddssp.cli import main
from marginals.datasets import demo_dataset
from marginals.privacy import cdp_rho

pytestmark = pytest.mark.filterwarnings("ignore::marginals.randomness.InsecureSeedWarning",
                                        "ignore::aim.release.NotPrivateWarning", "ignore::ddssp.InferredPairsWarning")
DATA = Path(__file__).parent / "data"
FAST = {"rounds": 6, "max_iters": 5, "final_iters": 10}
SPLIT = {"epsilon": 2.0, "delta": 1e-6, "threshold_delta": 1e-7, "aim_epsilon": 1.9, "spec_share": 0.05,
         "spec_rho": 0.004}


def raw_table(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    job = np.where(age > 50, rng.choice(["boss", "clerk"], n), rng.choice(["clerk", "nurse"], n))
    paid = np.where(age + rng.normal(0, 10, n) > 45, "yes", "no")
    return pd.DataFrame({"age": age, "job": job, "paid": paid})


@pytest.fixture(scope="module")
def raw_release() -> Release:
    return synthesize(raw_table(), epsilon=2.0, delta=1e-6, insecure_seed=4, **FAST)[0]


def _header(path: Path) -> dict:
    with zipfile.ZipFile(path) as zf:
        return json.loads(str(np.lib.format.read_array(zf.open("header.npy"))))


# --- the shape and its writers ---------------------------------------------------------------------


def test_an_aim_release_records_its_configuration_as_the_mechanism_part():
    data = demo_dataset(n=400, seed=5)
    release = AIM(1.0, 1e-9, max_iters=5, final_iters=5, max_cells=200, insecure_seed=11).run(data)
    assert set(release.config) == {"mechanism"} and release.config["mechanism"]["name"] == "AIM"
    config = release.mechanism_config(insecure_seed=11)
    assert (config.epsilon, config.delta, config.max_cells, config.insecure_seed) == (1.0, 1e-9, 200, 11)
    assert release.config == build_config(config)  # one writer: AIMConfig.to_dict, never the seed
    assert release.spec_config() is None and (release.epsilon, release.delta) == (1.0, 1e-9)


def test_a_raw_release_records_aim_and_the_budget_split(raw_release):
    split, aim = raw_release.spec_config(), raw_release.mechanism_config()
    ledger = raw_release.ledger
    assert list(raw_release.config) == ["mechanism", "spec"] and raw_release.config["spec"] == split.to_dict()
    assert (split.epsilon, split.delta, split.threshold_delta, split.spec_share) == (2.0, 1e-6, 1e-7, SPEC_SHARE)
    assert (raw_release.epsilon, raw_release.delta) == (2.0, 1e-6)  # the whole run's, from the spec part
    assert aim.epsilon == split.aim_epsilon < 2.0 and aim.delta == ledger.delta == 1e-6 - 1e-7
    assert cdp_rho(aim.epsilon, ledger.delta) + split.spec_rho <= ledger.rho * (1 + 1e-9)
    assert (aim.rounds, aim.max_iters, aim.final_iters) == (6, 5, 10)


def test_interval_mechanism_fits_on_a_raw_release(raw_release, tmp_path):
    # the flat config of the previous version made this fail: "unknown AIM configuration key(s) ['aim_epsilon', ...]"
    assert rerun_config(raw_release, 0).epsilon == raw_release.spec_config().aim_epsilon  # AIM's share is rerun
    raw_release.save(tmp_path / "raw.npz")
    for release in (raw_release, Release.load(tmp_path / "raw.npz")):
        model = DDSSPLinearRegression("age", categorical=["job", "paid"], interval="mechanism", n_boot=3, random_state=0)
        model.fit(release)
        assert model.coef_interval_.shape == (len(model.coef_), 2) and model.bootstrap_.errors.shape[0] == 3
        assert np.all(np.isfinite(model.coef_interval_)) and np.all(model.coef_interval_[:, 1] >= model.coef_interval_[:, 0])


def test_spec_config_is_checked_when_built():
    assert SpecConfig(**SPLIT).to_dict() == SPLIT and SpecConfig.from_dict(SPLIT) == SpecConfig(**SPLIT)
    for key, value, error in (("delta", 1.0, ValueError), ("threshold_delta", 2e-6, ValueError),
                              ("spec_share", 0.0, ValueError), ("spec_rho", -1.0, ValueError),
                              ("epsilon", "2", TypeError), ("aim_epsilon", float("nan"), TypeError),
                              ("spec_rho", True, TypeError)):
        with pytest.raises(error, match=key):
            SpecConfig(**{**SPLIT, key: value})
    with pytest.raises(ValueError, match=r"missing key\(s\) \['spec_rho'\], unknown key\(s\) \['rho'\]"):
        SpecConfig.from_dict({**{k: v for k, v in SPLIT.items() if k != "spec_rho"}, "rho": 0.1})


def test_check_config_refuses_what_no_writer_writes():
    mechanism = AIMConfig(1.9, 9e-7, workload=[("a", "b")]).to_dict()
    check_config({})  # a release built by hand
    check_config({"mechanism": mechanism, "spec": SPLIT})
    check_config({"mechanism": {**mechanism, "exact_noise": False}})  # float noise: its seed is never stored
    bad = [
        ({"mechanism": mechanism, "epsilon": 1.0}, ValueError, r"unknown config part\(s\) \['epsilon'\]"),
        ({"mechanism": {**mechanism, "name": "MST"}}, ValueError, "not an AIM configuration"),
        ({"mechanism": {**mechanism, "max_iters": "5"}}, TypeError, "max_iters"),
        ({"mechanism": {**mechanism, "exact_noise": 0}}, TypeError, "exact_noise"),
        ({"mechanism": {**mechanism, "spec_rho": 0.1}}, ValueError, "unknown AIM configuration key"),
        ({"mechanism": ["AIM"]}, TypeError, "mapping"),
        ({"spec": SPLIT}, ValueError, "needs the mechanism config"),
        ({"mechanism": {**mechanism, "epsilon": 1.0}, "spec": SPLIT}, ValueError, "aim_epsilon"),
    ]
    for config, error, message in bad:
        with pytest.raises(error, match=message):
            check_config(config)
    release = AIM(1.0, max_iters=5, final_iters=5, insecure_seed=0).run(demo_dataset(n=300))
    with pytest.raises(ValueError, match="unknown config part"):
        dataclasses.replace(release, config={**release.config["mechanism"]})  # the old flat shape
    with pytest.raises(ValueError, match="insecure_seed"):
        dataclasses.replace(release, config={"mechanism": {**mechanism, "exact_noise": False}}).mechanism_config()
    with pytest.raises(ValueError, match="records no mechanism configuration"):
        dataclasses.replace(release, config={}).mechanism_config()


# --- files of the previous format (flat config) ----------------------------------------------------


def test_from_flat_maps_hand_written_old_configs():
    mechanism = AIMConfig(1.9, 9e-7, workload=[("a", "b")]).to_dict()
    flat = {("mechanism" if k == "name" else k): v for k, v in mechanism.items()}
    assert from_flat(flat) == {"mechanism": mechanism}
    old_raw = {**flat, "epsilon": 2.0, "delta": 1e-6, "threshold_delta": 1e-7, "aim_epsilon": 1.9,
               "spec_share": 0.05, "spec_rho": 0.004}
    upgraded = from_flat(old_raw)
    assert upgraded["spec"] == SPLIT and upgraded["mechanism"]["epsilon"] == 1.9
    assert upgraded["mechanism"]["delta"] == 1e-6 - 1e-7 and list(upgraded["mechanism"]) == list(mechanism)
    check_config(upgraded)
    assert from_flat({}) == {} and from_flat([1]) == [1]
    assert from_flat({"epsilon": 1.0}) == {"mechanism": {"name": "AIM", "epsilon": 1.0}}
    with pytest.raises(ValueError, match="missing key"):  # half a split is refused, not guessed
        check_config(from_flat({**flat, "spec_rho": 0.1}))


def test_an_old_aim_file_is_read_in_parts(tmp_path):
    path = DATA / "aim-release-v3.npz"
    flat = _header(path)["config"]
    assert _header(path)["version"] == 3 and flat["mechanism"] == "AIM"
    release = Release.load(path)
    assert release.config == {"mechanism": {"name": "AIM", **{k: v for k, v in flat.items() if k != "mechanism"}}}
    config = release.mechanism_config()
    assert (config.epsilon, config.delta, config.max_cells, config.final_iters) == (1.0, 1e-9, 200, 5)
    assert (release.epsilon, release.delta, release.spec_config()) == (1.0, 1e-9, None)
    release.save(tmp_path / "v4.npz")  # written again in the current format, the rest unchanged
    again = Release.load(tmp_path / "v4.npz")
    assert _header(tmp_path / "v4.npz")["version"] == VERSION == 4 and again.config == release.config
    for a, b in zip(again.measurements, release.measurements):
        np.testing.assert_array_equal(a.noisy_counts, b.noisy_counts)


def test_an_old_raw_file_is_read_in_parts_and_refits(tmp_path):
    path = DATA / "aim-release-v3-raw.npz"
    flat = _header(path)["config"]
    release = Release.load(path)
    split, aim = release.spec_config(), release.mechanism_config()
    assert split.to_dict() == {k: flat[k] for k in SPLIT}  # the run's epsilon and delta, and the split
    assert (aim.epsilon, aim.delta, aim.rounds) == (flat["aim_epsilon"], release.ledger.delta, 6)
    assert math.isclose(aim.delta, flat["delta"] - flat["threshold_delta"], rel_tol=0)
    assert (release.epsilon, release.delta) == (2.0, 1e-6) and "thresholded histograms" in release.summary()
    model = DDSSPLinearRegression("age", categorical=["job", "paid"], interval="mechanism", n_boot=2, random_state=0)
    assert np.all(np.isfinite(model.fit(release).coef_interval_))


def test_old_files_are_checked_as_strictly(tmp_path, rewrite_release):
    path = DATA / "aim-release-v3-raw.npz"
    cases = [
        (lambda h: h["config"].update(threshold_delta=1e-12), "more than the"),
        (lambda h: h["config"].update(delta=2e-6), "does not match the ledger's delta"),
        (lambda h: h["config"].update(epsilon=3.0), "means rho="),
        (lambda h: h["config"].pop("spec_rho"), "missing key"),
        (lambda h: h["config"].update(workload=3), "config workload must be a JSON list"),
        (lambda h: h["config"].update(mechanism="MST"), "not an AIM configuration"),
    ]
    for i, (edit, message) in enumerate(cases):
        bad = rewrite_release(path, tmp_path / f"bad{i}.npz", edit)
        with pytest.raises(ReleaseFormatError, match=message):
            Release.load(bad)


def test_tampered_parts_are_refused_and_inspect_shows_them(raw_release, tmp_path, capsys, rewrite_release):
    raw_release.save(tmp_path / "r.npz")
    cases = [
        (lambda h: h["config"].update(budget={}), r"unknown config part\(s\) \['budget'\]"),
        (lambda h: h["config"]["mechanism"].update(delta=1e-6), "the mechanism's delta"),
        (lambda h: h["config"]["spec"].update(spec_rho=1.0), "more than the ledger's"),
        (lambda h: h["config"]["spec"].update(aim_epsilon=1.0), "aim_epsilon"),
        (lambda h: h["config"]["spec"].update(epsilon=3.0), "means rho="),
        (lambda h: h["config"]["mechanism"].update(max_model_size=-1), "max_model_size"),
    ]
    for i, (edit, message) in enumerate(cases):
        bad = rewrite_release(tmp_path / "r.npz", tmp_path / f"bad{i}.npz", edit)
        with pytest.raises(ReleaseFormatError, match=message):
            Release.load(bad)
    assert main(["inspect", str(tmp_path / "r.npz"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["config"]["spec"] == raw_release.config["spec"] and "workload" not in shown["config"]["mechanism"]
    assert shown["workload_cliques"] == len(raw_release.config["mechanism"]["workload"]) == 3
    assert shown["privacy"]["epsilon"] == 2.0 and shown["privacy"]["delta"] == 1e-6

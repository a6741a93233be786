"""`benchmarks.target_workload`'s pieces without the data: the AIM arguments of each mode, the
pilot's weight options, the cache key of a default release and the summary table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from aim import AIMConfig
from aim.targets import target_workload
from benchmarks import target_workload as tw
from marginals import Domain

DOMAIN = Domain.from_dict({"a": 3, "b": 4, "y": 2})


def test_aim_arguments_of_each_mode():
    assert tw.aim_kwargs(1.0, 7, "default", {"target_share": 0.2}, DOMAIN, ()) == {
        "epsilon": 1.0, "delta": tw.DELTA, "insecure_seed": 7}  # fmt: skip
    kwargs = tw.aim_kwargs(1.0, 7, "targets", {"target_share": 0.2, "target_weight": 4.0}, DOMAIN, ("y",))
    assert kwargs["targets"] == ["y"] and kwargs["target_share"] == 0.2
    assert kwargs["workload"] == target_workload(DOMAIN, ["y"], target_weight=4.0)  # the pilot's weights
    assert tw.parse_option("target_share=0.3") == ("target_share", 0.3)


def test_a_default_release_keeps_its_cache_key(tmp_path):
    kwargs = tw.aim_kwargs(0.5, 3, "default", {}, DOMAIN, ())
    path = tw.cache_file(tmp_path, "adult", 0.5, 0, 3, "default", kwargs)
    assert "targets" not in AIMConfig(**kwargs).to_dict()  # the key of the versions before targets
    assert path == tw.cache_file(Path(tmp_path), "adult", 0.5, 0, 3, "default", dict(kwargs))
    assert path != tw.cache_file(tmp_path, "adult", 0.5, 0, 3, "default", tw.aim_kwargs(0.5, 3, "targets", {}, DOMAIN, ("y",)))


def test_summary_table_compares_the_two_releases():
    rows = [{"dataset": "d", "task": "t", "metric_name": "auc", "method": m, "epsilon": 1.0, "metric": v}
            for m, vals in (("ddssp_default", (0.80, 0.82)), ("ddssp_targets", (0.85, 0.87)), ("objpert", (0.7, 0.7)))
            for v in vals]  # fmt: skip
    table = tw.summary_table(pd.DataFrame(rows))
    line = [x for x in table.splitlines() if x.startswith("| d / t")][0]
    assert "0.81 ±" in line and "0.86 ±" in line and line.rstrip().endswith("+0.05 |")

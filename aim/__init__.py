"""The AIM mechanism (adaptive select-measure-reconstruct): its configuration (`AIMConfig`),
the run (`AIM`), the release it returns (`Release`: its record, storage `aim.storage`, views
`aim.views`, typed configuration `aim.release_config`), workloads and workload error; `synthesize`
runs it on a raw table (spec given, or inferred under DP on the same ledger). The quality report
is `aim.report.write_report`."""

from .config import AIMConfig
from .mechanism import AIM, plan_round, round_cost, round_scales, should_anneal
from .metrics import workload_error
from .raw import synthesize
from .release import NotPrivateWarning, Release
from .release_checks import ReleaseFormatError
from .views import ReleaseView
from .workload import all_k_way, candidates, normalize_workload

__all__ = [
    "AIM",
    "AIMConfig",
    "NotPrivateWarning",
    "Release",
    "ReleaseFormatError",
    "ReleaseView",
    "all_k_way",
    "candidates",
    "normalize_workload",
    "plan_round",
    "round_cost",
    "round_scales",
    "should_anneal",
    "synthesize",
    "workload_error",
]

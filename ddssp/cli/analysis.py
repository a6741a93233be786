"""``synth --analysis``: the release serves one regression (`aim.analysis`); the estimator it is made
for, built from the same flags as ``fit`` so that ``fit`` finds the release's analysis its own."""

from __future__ import annotations

import argparse
from typing import Any

from marginals.domain import Domain

from ..encoding import CATEGORICAL_PRESETS, EncodingOptions
from ..estimators import DDSSPLinearRegression, DDSSPLogisticRegression
from .common import share
from .fit import one_hot_attributes


def analysis_estimator(args: argparse.Namespace, targets: list[str] | None, domain: Domain | None) -> Any:
    """The DD-SSP estimator of ``--analysis`` (None without it): one --target, the fit's encoding flags."""
    if not args.analysis:
        for flag in ("categorical", "preset", "analysis_share"):
            if getattr(args, flag) not in (None, False):
                raise ValueError(f"--{flag.replace('_', '-')} is for --analysis (the regression the release serves)")
        return None
    if not targets or len(targets) != 1:
        raise ValueError("--analysis needs exactly one --target: the regression's target")
    names = domain.attrs if domain is not None else ()
    categorical = one_hot_attributes(args, names, targets[0]) if domain is not None or not args.preset else None
    if domain is None and args.preset:
        raise ValueError("--preset needs --domain or --spec (it names the data set's attributes); give --categorical")
    cls = DDSSPLinearRegression if args.analysis == "linear" else DDSSPLogisticRegression
    return cls(targets[0], categorical=categorical, encoding=EncodingOptions(intercept=args.intercept))



def add_analysis_flags(p: argparse.ArgumentParser) -> None:
    """--analysis and the encoding flags of its estimator."""
    p.add_argument("--analysis", choices=["linear", "logistic"], default=None,
                   help="make the release serve this regression of the one --target (README 'Intervals that "
                        "cover'): part of the budget (--analysis-share) buys private Newton steps from the "
                        "release's own fit, so `fit` with the same --target, --model, --categorical/--preset and "
                        "--intercept gets coefficients and 90%% intervals that account for what the model inferred")
    p.add_argument("--analysis-share", type=share, default=None, metavar="SHARE",
                   help="with --analysis: the share of the budget the regression gets (default 0.3)")
    p.add_argument("--categorical", metavar="ATTRS",
                   help="with --analysis: comma-separated one-hot features (as for fit)")
    p.add_argument("--preset", choices=sorted(CATEGORICAL_PRESETS),
                   help="with --analysis: the DD-SSP paper's one-hot features for that data set (as for fit)")
    p.add_argument("--intercept", action="store_true", help="with --analysis: an intercept column (as for fit)")

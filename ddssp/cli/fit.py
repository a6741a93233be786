"""``dp-marginals fit``: a DD-SSP regression from the marginals of a release alone (no private
rows, no further privacy cost); its coefficients printed and, with ``--json``, saved for ``predict``."""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any, Sequence

from aim import Release
from marginals.files import write_text_atomic

from .common import check_outputs, load_release, nonnegative_int, note, split_names, subcommand
from ..encoding import CATEGORICAL_PRESETS, EncodingOptions, categorical_preset, check_fit_cells
from ..estimators import OBJECTIVES, DDSSPLinearRegression, DDSSPLogisticRegression


def _fit_result(model: Any, args: argparse.Namespace, release: Release, exclude: list[str]) -> dict:
    result = {
        "release": str(args.release),
        "target": args.target,
        "model": args.model,
        "excluded": exclude,
        "release_epsilon": release.epsilon,
        "release_delta": release.delta,
        "categorical": None if model.categorical is None else list(model.categorical),
        "fit_intercept": bool(model.encoding_.intercept),
        "features": list(model.encoded_feature_names_),  # level labels when the release has a spec
        "coef": [float(c) for c in model.coef_],
        "intercept": float(model.intercept_) if model.encoding_.intercept else None,
        "refined": getattr(model, "analysis_", None) is not None,
    }
    if result["refined"]:
        frame = model.conf_int(0.1)
        result["conf_int_90"] = [[float(lo), float(hi)] for lo, hi in zip(frame["lower"], frame["upper"])]
    if args.model == "logistic":
        result["classes"] = [c if isinstance(c, str) else int(c) for c in model.classes_]
        classes = model.target_classes_
        result["left_out_levels"] = [] if classes is None else [
            label for code, label in enumerate(release.discretizer.labels(args.target)) if code not in classes.codes]
        result["objective"] = model.objective
        result["sample_seed"] = args.sample_seed  # a post-processing seed (the model is public): safe to record
        if model.objective == "chebyshev":
            result["chebyshev_monomial_coefficients"] = [float(b) for b in model.monomial_coef_]
    return result


def check_fit_size(source: Any, target: str, categorical: Sequence[str] | None, path: Any) -> None:
    """Refuse, before fitting, a release whose domain makes the fit's tables too large (names the file)."""
    try:
        check_fit_cells(source.domain, target, categorical)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _g(value: float | None) -> str:
    return "unknown" if value is None else f"{value:g}"  # a release built by hand may lack (eps, delta)


def one_hot_attributes(args: argparse.Namespace, domain: Any, target: str) -> Sequence[str] | None:
    """The one-hot features of ``--categorical`` / ``--preset`` (None: the domain's order decides)."""
    if args.preset and args.categorical:
        raise ValueError("give --categorical or --preset, not both")
    if args.preset:
        return [a for a in categorical_preset(args.preset) if a in domain and a != target]
    return split_names(args.categorical) if args.categorical else None


def refined_lines(model: Any, width: int) -> list[str]:
    """The 90% intervals of a fit refined by its release's analysis, one line per coefficient."""
    frame = model.conf_int(0.1)
    lines = ["  90% intervals (the release's analysis: normal, from its noisy gradients; centred on the unbiased "
             "refined estimate, the coefficients above are its shrunk version):"]  # fmt: skip
    lines += [f"  {name:<{width}}  [{lo: .6f}, {hi: .6f}]" for name, lo, hi in zip(frame.index, frame["lower"], frame["upper"])]
    return lines


def run(args: argparse.Namespace) -> int:
    """Run ``fit``; returns the exit code."""
    check_outputs([("--json", args.json)], [("--release", args.release)])
    release = load_release(args.release)
    exclude = split_names(args.exclude)
    if args.target in exclude:
        raise ValueError(f"the target {args.target!r} cannot be excluded")
    source = release.without(exclude) if exclude else release
    if args.target not in source.domain:
        raise ValueError(f"target {args.target!r} is not in the release's domain; attributes are {list(source.domain.attrs)}")
    categorical = one_hot_attributes(args, source.domain, args.target)
    options = dict(target=args.target, categorical=categorical, encoding=EncodingOptions(intercept=args.intercept))
    if args.model == "linear":
        if args.objective is not None:
            raise ValueError("--objective applies to --model logistic only")
        model = DDSSPLinearRegression(**options)
    else:
        model = DDSSPLogisticRegression(**options, objective=args.objective or "chebyshev", random_state=args.sample_seed)
    check_fit_size(source, args.target, categorical, args.release)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(source)
    for w in caught:
        note(args, f"warning: {' '.join(str(w.message).split())}")
    result = _fit_result(model, args, release, exclude)
    print(
        f"DD-SSP {args.model} regression of {args.target!r} from {args.release} (release: eps={_g(release.epsilon)}, "
        f"delta={_g(release.delta)}; fitting spends no further privacy)"
    )
    width = max(len(n) for n in result["features"] + ["intercept"])
    for feature, coef in zip(result["features"], result["coef"]):
        print(f"  {feature:<{width}}  {coef: .6f}")
    if result["fit_intercept"]:
        print(f"  {'intercept':<{width}}  {result['intercept']: .6f}")
    else:
        print("  (no intercept column: the paper's encoding has none; --intercept fits one)")
    if getattr(model, "analysis_", None) is not None:
        for line in refined_lines(model, width):
            print(line)
    if args.model == "logistic":
        print(f"  classes: {result['classes']} (positive class: {args.target} = {result['classes'][1]})")
        if result["left_out_levels"]:
            print(f"  rows whose {args.target} is {' or '.join(result['left_out_levels'])} are left out of the fit")
    if args.json:
        write_text_atomic(args.json, json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``fit`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "fit", "DD-SSP regression from a release alone",
                    "Fit a DD-SSP regression from the marginals of a release (no private rows, "
                    "no further privacy cost) and print its coefficients.")
    p.add_argument("--release", required=True, metavar="NPZ", help="a release file written by synth")
    p.add_argument("--target", required=True, metavar="ATTR", help="the attribute to predict (a column of the release)")
    p.add_argument("--model", choices=["linear", "logistic"], default="linear",
                   help="linear (least squares) or logistic (Chebyshev approximation; a 2-level target) "
                        "(default linear)")
    p.add_argument("--exclude", metavar="ATTRS", help="comma-separated attributes to leave out of the features")
    p.add_argument("--categorical", metavar="ATTRS",
                   help="comma-separated one-hot features (others numeric; default: the release's ordered "
                        "attributes numeric, from its domain or spec, the others one-hot; all one-hot, with a "
                        "warning, when the release says nothing about order)")
    p.add_argument("--preset", choices=sorted(CATEGORICAL_PRESETS),
                   help="the DD-SSP paper's one-hot features for that data set (instead of --categorical)")
    p.add_argument("--json", metavar="FILE", help="also write the coefficients to this JSON file")
    p.add_argument("--intercept", action="store_true", help="add an intercept column (the paper's encoding has none)")
    p.add_argument("--objective", choices=list(OBJECTIVES), default=None,
                   help="logistic only: 'chebyshev' (default; the paper's degree-2 approximation, from pairwise "
                        "marginals) or 'expected' (the log-likelihood expected under the release's model, by Newton "
                        "on rows drawn from it)")
    p.add_argument("--sample-seed", type=nonnegative_int, default=None, metavar="SEED",
                   help="seed of --objective expected's draws from the model (post-processing of the public "
                        "release, so safe to give; default: fresh OS entropy)")
    p.set_defaults(func=run)

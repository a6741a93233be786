"""``dp-marginals predict``: predictions of a DD-SSP model saved by ``fit --json`` on new rows.

A DD-SSP fit is deterministic post-processing of the release, so the model is not pickled: the
coefficient file records the settings (target, model, excluded attributes, one-hot features,
intercept; a logistic fit's objective and sample seed) and ``predict`` refits them on the same
release, checks that the coefficients agree with the file (a file from another release or settings
is refused) and predicts ``--data``. A logistic fit with ``--objective expected`` and no
``--sample-seed`` drew fresh random rows, so it cannot be replayed: its features are checked
against a refit and its coefficients are taken from the file.
Rows are raw values when the release carries a spec (coded by it), integer codes otherwise;
columns are taken by name (any order, extra columns such as the target ignored). The spec codes
them by the rules the release was made with: a value outside a column's categories goes to
``<other>`` and a missing value to the missing level (every inferred column has both). A row it
still cannot code (a "drop" rule of the spec, declared by the schema) is refused, as its release
left such rows out: the error names the column and the rule, never a value or a count, and no
file is written (one prediction per input row, or none).

Output CSV, one row per input row: linear models ``prediction`` (the target on its code scale)
and, with a spec, ``prediction_label`` (the label of the nearest level); logistic models
``prediction`` (the class: the spec's label or the code) and ``probability`` (of the positive
class, ``classes[1]``). Predictions are derived from the given rows, so the file is written
``0600`` like other outputs derived from rows.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import is_classifier

from marginals.dataset import read_csv_file
from marginals.files import read_json, write_text_atomic

from .common import add_csv_output_flags, check_outputs, csv_text, load_release, private_note, subcommand
from .fit import check_fit_size
from ..encoding import EncodingOptions
from ..estimators import OBJECTIVES, DDSSPLinearRegression, DDSSPLogisticRegression

#: largest difference between the file's coefficients and the refit ones (both are the same
#: deterministic computation; only JSON's decimal round trip separates them).
COEF_TOLERANCE = 1e-9


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: the coefficient file's fields and their JSON types (a crafted file is bad input, not a TypeError).
_COEF_FIELDS = {
    "target": lambda v: isinstance(v, str), "excluded": _texts, "features": _texts,
    "categorical": lambda v: v is None or _texts(v), "fit_intercept": lambda v: isinstance(v, bool),
    "coef": lambda v: isinstance(v, list) and all(_number(x) for x in v), "intercept": lambda v: v is None or _number(v),
}


def _settings(path: str) -> dict:
    raw = read_json(path, "coefficient file")
    need = ("target", "model", "excluded", "features", "coef")
    if not isinstance(raw, dict) or any(k not in raw for k in need):
        raise ValueError(f"{path}: not a coefficient file of `fit --json` (needs the keys {list(need)})")
    if raw["model"] not in ("linear", "logistic"):
        raise ValueError(f"{path}: unknown model {raw['model']!r} (linear or logistic)")
    for key, ok in _COEF_FIELDS.items():
        if key in raw and not ok(raw[key]):
            raise ValueError(f"{path}: {key!r} has the wrong type ({raw[key]!r:.60}); not a file written by fit --json")
    return raw


def refit(release: Any, settings: dict, path: str) -> Any:
    """The model of a coefficient file, refitted on ``release``; refused when the coefficients differ."""
    source = release.without(settings["excluded"]) if settings["excluded"] else release
    if settings["target"] not in source.domain:
        raise ValueError(f"{path}: target {settings['target']!r} is not an attribute of the release")
    check_fit_size(source, settings["target"], settings.get("categorical"), path)
    options = dict(categorical=settings.get("categorical"),
                   encoding=EncodingOptions(intercept=bool(settings.get("fit_intercept", False))))
    if settings["model"] == "linear":
        model = DDSSPLinearRegression(settings["target"], **options)
    else:
        objective, seed = settings.get("objective", "chebyshev"), settings.get("sample_seed")
        if objective not in OBJECTIVES or not (seed is None or (isinstance(seed, int) and seed >= 0)):
            raise ValueError(f"{path}: unknown objective {objective!r} or a bad sample_seed; not a file written by fit --json")
        # an unseeded 'expected' fit cannot be replayed: refit the structure, keep the file's coefficients
        replay = objective == "chebyshev" or seed is not None
        model = DDSSPLogisticRegression(settings["target"], **options, objective=objective if replay else "chebyshev",
                                        random_state=seed)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fit already reported the inferred pairs
        model.fit(source)
        if settings.get("categorical") is None and list(model.encoded_feature_names_) != list(settings["features"]):
            # a file written before categorical=None read the domain's order metadata: every feature one-hot
            model.set_params(categorical=[a for a in source.domain.attrs if a != settings["target"]]).fit(source)
    same_names = list(model.encoded_feature_names_) == list(settings["features"])
    saved = np.append(np.asarray(settings["coef"], dtype=np.float64), settings.get("intercept") or 0.0)
    refitted = np.append(model.coef_, model.intercept_)
    if settings["model"] == "logistic" and not replay and same_names and saved.shape == refitted.shape:
        model.coef_, model.intercept_ = saved[:-1].copy(), float(saved[-1])
        return model
    if not same_names or saved.shape != refitted.shape or np.any(np.abs(saved - refitted) > COEF_TOLERANCE):
        raise ValueError(f"{path}: its coefficients do not match a refit on this release (another release or "
                         "other settings?); run fit --json on this release again")  # fmt: skip
    return model


def predictions(model: Any, rows: pd.DataFrame) -> pd.DataFrame:
    """The output table of ``predict`` (see the module docstring)."""
    if is_classifier(model):
        return pd.DataFrame({"prediction": model.predict(rows), "probability": model.predict_proba(rows)[:, 1]})
    values = model.predict(rows)
    out = pd.DataFrame({"prediction": values})
    if model.discretizer_ is not None:
        labels = np.asarray(model.discretizer_.labels(model.target_), dtype=object)
        out["prediction_label"] = labels[np.clip(np.rint(values), 0, len(labels) - 1).astype(np.intp)]
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``predict``; returns the exit code."""
    check_outputs([("--out", args.out)], [("--release", args.release), ("--coef", args.coef), ("--data", args.data)])
    settings = _settings(args.coef)
    model = refit(load_release(args.release), settings, args.coef)
    rows = read_csv_file(args.data, text=model.discretizer_ is not None, skipinitialspace=True)  # raw rows: as text
    try:
        table = predictions(model, rows)
    except ValueError as exc:
        raise ValueError(f"{args.data}: {exc}") from None
    write_text_atomic(args.out, csv_text(table, args.escape_formulas), mode=0o600)
    print(f"wrote {args.out} (predictions of {settings['target']!r}, {settings['model']} model)")
    private_note(args, f"{args.data}: {len(table):,} rows predicted")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``predict`` to the subcommands ``sub``."""
    p = subcommand(sub, common, "predict", "predictions of a fitted DD-SSP model on new rows",
                   "Refit the model that fit --json saved (deterministic: no privacy cost) from its release and "
                   "write its predictions for the rows of --data.")  # fmt: skip
    p.add_argument("--release", required=True, metavar="NPZ", help="the release the model was fitted on")
    p.add_argument("--coef", required=True, metavar="JSON", help="the coefficient file written by fit --json")
    p.add_argument("--data", required=True, metavar="CSV",
                   help="rows to predict: raw values if the release has a spec, integer codes otherwise")
    p.add_argument("--out", required=True, metavar="CSV", help="the predictions (one row per --data row)")
    add_csv_output_flags(p)
    p.set_defaults(func=run)

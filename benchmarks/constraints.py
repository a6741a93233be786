"""Public rules on the raw UCI Adult file (issue 28 item 2): rule violations in synthetic rows
before / after the rules, their cost in workload error, and the time.

    python -m benchmarks.constraints                    # eps 1, seeds 0..4
    python -m benchmarks.constraints --seeds 2 --eps 1 4

Protocol: adult-raw ``adult.data`` (32,561 rows) coded with the public spec
``examples/adult-raw-spec.json``; per (epsilon, seed) two AIM runs (delta 1e-9, insecure seed =
the seed, a benchmark: not private) that differ only in the public rules of
``examples/adult-raw-rules.json`` (education-num is the census code of education, a husband is
male, a wife is female, a husband or wife is married with the spouse present):

* ``without``: no rules; ``with``: the rules, as structural zeros of the model.

From each release 100,000 synthetic rows (sample seed = seed + 1000) decoded to raw values; the
violations of each rule are counted on the raw values by plain pandas tests written here
(independently of the compiled masks), and on the codes by the compiled rules. Workload error
(all 2-way marginals, mean L1 of normalised tables, `aim.workload_error`) against the real coded
rows, of the model and of the 100k synthetic rows; seconds of the AIM run and of the sampling.
Writes ``runs.json`` and ``summary.md`` to ``--out`` (default benchmarks/results/constraints).
"""

from __future__ import annotations

from .harness import RESULTS, single_threaded

single_threaded()  # before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from aim import AIM, all_k_way, workload_error  # noqa: E402
from marginals.rules import compile_rules, violations  # noqa: E402
from marginals.spec.discretize import Discretizer  # noqa: E402

from .data import load_adult_raw  # noqa: E402
from .harness import machine_info, write_json, write_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "adult-raw-spec.json"
RULES = ROOT / "examples" / "adult-raw-rules.json"
ROWS = 100_000
DELTA = 1e-9
EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad", "Some-college",
             "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]


def raw_breaks(df: pd.DataFrame) -> dict[str, int]:
    """Rows breaking each rule of ``examples/adult-raw-rules.json``, tested on raw values."""
    text = {c: df[c].astype(object) for c in ("education", "relationship", "sex", "marital-status")}
    code = text["education"].map({e: i + 1 for i, e in enumerate(EDUCATION)})
    num = pd.to_numeric(df["education-num"].astype(object), errors="coerce")
    spouse = text["relationship"].isin(["Husband", "Wife"])
    married = text["marital-status"].isin(["Married-civ-spouse", "Married-AF-spouse"])
    tests = {
        "education-num = code(education)": code.notna() & (num != code),
        "husband -> male": (text["relationship"] == "Husband") & (text["sex"] != "Male"),
        "wife -> female": (text["relationship"] == "Wife") & (text["sex"] != "Female"),
        "husband/wife -> married, spouse present": spouse & ~married,
    }
    out = {name: int(hit.sum()) for name, hit in tests.items()}
    out["any rule"] = int(np.logical_or.reduce([hit.to_numpy() for hit in tests.values()]).sum())
    return out


def one_run(raw: pd.DataFrame, epsilon: float, seed: int, with_rules: bool) -> dict:
    """One AIM release with or without the rules, and what its synthetic rows break."""
    spec = json.loads(SPEC.read_text())
    rules = json.loads(RULES.read_text())
    disc = Discretizer.from_spec({**spec, "rules": rules})  # the rules are checked either way
    coded = disc.transform(raw, extra="drop")
    zeros = compile_rules(disc.domain, disc.rules)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the insecure-seed warning
        start = time.perf_counter()
        release = AIM(epsilon, DELTA, insecure_seed=seed, constraints=disc.rules if with_rules else None).run(coded)
        aim_seconds = time.perf_counter() - start
    rng = np.random.default_rng(seed + 1000)
    start = time.perf_counter()
    codes = release.synthetic_codes(ROWS, rng=rng)
    sample_seconds = time.perf_counter() - start
    decoded = disc.inverse_transform(codes, rng=rng, numeric="uniform", typed=True)
    workload = all_k_way(disc.domain, 2)
    return {
        "epsilon": epsilon, "seed": seed, "rules": "with" if with_rules else "without",
        "raw_violations": raw_breaks(decoded), "code_violations": int(violations(codes, zeros).sum()),
        "model_error": workload_error(coded, release.model, workload),
        "synthetic_error": workload_error(coded, codes, workload),
        "aim_seconds": aim_seconds, "sample_seconds": sample_seconds,
        "model_cliques": len(release.model.cliques), "model_mb": release.model.size_mb, "rounds": len(release.rounds),
    }


def _mean_sd(values: list[float], digits: int) -> str:
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def summary(runs: list[dict], real: dict[str, int], n_real: int, note: str = "") -> str:
    """The markdown table: per epsilon and mode, mean ± sd over seeds (and ``note`` below it)."""
    names = list(real)
    lines = [
        "# Public rules on adult-raw: violations per 100k synthetic rows, workload error, time",
        "",
        f"`python -m benchmarks.constraints --eps {' '.join(f'{e:g}' for e in sorted({r['epsilon'] for r in runs}))} "
        f"--seeds {len({r['seed'] for r in runs})}` (delta {DELTA:g}; 100,000 synthetic rows per run; rules: "
        "`examples/adult-raw-rules.json`; spec: `examples/adult-raw-spec.json`; 2-core machine, one process).",
        f"The real file ({n_real:,} rows) breaks them in {real['any rule']} rows "
        f"({', '.join(f'{k}: {v}' for k, v in real.items() if k != 'any rule')}): the public rules win.",
        "",
        "| eps | rules | " + " | ".join(names) + " | code-level | model error | synthetic error | AIM s | sample s |",
        "|---|---|" + "---|" * (len(names) + 5),
    ]
    for eps in sorted({r["epsilon"] for r in runs}):
        for mode in ("without", "with"):
            rs = [r for r in runs if r["epsilon"] == eps and r["rules"] == mode]
            if not rs:
                continue
            cells = [_mean_sd([r["raw_violations"][n] for r in rs], 0) for n in names]
            cells += [_mean_sd([r["code_violations"] for r in rs], 0), _mean_sd([r["model_error"] for r in rs], 4),
                      _mean_sd([r["synthetic_error"] for r in rs], 4), _mean_sd([r["aim_seconds"] for r in rs], 1),
                      _mean_sd([r["sample_seconds"] for r in rs], 2)]
            lines.append(f"| {eps:g} | {mode} | " + " | ".join(cells) + " |")
    lines += ["", "Paired by seed (same noise seed, with - without the rules):", ""]
    for eps in sorted({r["epsilon"] for r in runs}):
        pairs = [(a, b) for a in runs for b in runs if a["epsilon"] == b["epsilon"] == eps and a["seed"] == b["seed"]
                 and a["rules"] == "with" and b["rules"] == "without"]
        if pairs:
            model = [a["model_error"] - b["model_error"] for a, b in pairs]
            synth = [a["synthetic_error"] - b["synthetic_error"] for a, b in pairs]
            lower = sum(d < 0 for d in model)
            lines.append(f"- eps {eps:g}: model error {_mean_sd(model, 4)}, synthetic error {_mean_sd(synth, 4)} "
                         f"(lower with the rules in {lower} of {len(pairs)} seeds)")
    return "\n".join(lines + ([""] + [note] if note else [])) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "constraints")
    parser.add_argument("--summarize", action="store_true", help="rewrite summary.md from --out's runs.json")
    parser.add_argument("--note", default="", help="a paragraph added below the tables (e.g. how busy the machine was)")
    args = parser.parse_args(argv)
    if args.summarize:
        saved = json.loads((args.out / "runs.json").read_text())
        text = summary(saved["runs"], saved["real_violations"], saved["real_rows"], args.note)
        write_text(args.out / "summary.md", text)
        print(text)
        return 0
    raw = load_adult_raw("train")
    real = raw_breaks(raw)
    runs = []
    for eps in args.eps:
        for seed in range(args.seeds):
            for with_rules in (False, True):
                run = one_run(raw, eps, seed, with_rules)
                runs.append(run)
                print(json.dumps(run), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "runs.json", {"runs": runs, "real_violations": real, "real_rows": len(raw),
                                        "machine": machine_info()})
    text = summary(runs, real, len(raw), args.note)
    write_text(args.out / "summary.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

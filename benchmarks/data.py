"""The team's development data sets (benchmarks and tests only; the library never looks for them).

They are referenced by path (never copied into the repository): ``$DP_MARGINALS_DATA`` if set (and
only there), else the first existing ``shared/data`` next to the working directory or the source
tree. Outside the team's machines that folder is absent: tests skip, and examples use
`marginals.datasets.load_adult` (shipped) or `marginals.datasets.demo_dataset` (generated).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from marginals.dataset import Dataset
from marginals.domain import Domain

BUNDLED = ("adult", "acs-income-lin", "acs-employment")
#: the ordered (ordinal) attributes of the bundled data sets (public: what each code means), which
#: `load_bundled` declares on their domains (`marginals.Domain.ordinal`; their domain.json files are in
#: the plain form). Those the DD-SSP paper keeps numeric (`ddssp.CATEGORICAL_PRESETS`) except ESP
#: (employment status of parents: 8 situations and N/A) and MIG (mobility: same house / abroad /
#: other house in the US), nominal ACS codes the paper one-hot encodes in its ACSPublicCoverage task.
#: Two-level attributes count as ordered (one +-1 column, as in the paper).
ORDINAL = {
    "adult": ("age", "fnlwgt", "education-num", "sex", "capital-gain", "capital-loss", "hours-per-week", "income>50K"),
    "acs-income-lin": ("AGEP", "SCHL", "WKHP", "SEX", "PINCP"),
    "acs-employment": ("AGEP", "SCHL", "DIS", "NATIVITY", "DEAR", "DEYE", "DREM", "SEX", "ESR"),
}
ADULT_RAW_COLUMNS = (  # the order of adult.names; the last column (the class) is unnamed there
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
)


def data_dir() -> Path | None:
    """The folder holding the bundled data sets, or None when it is absent."""
    if os.environ.get("DP_MARGINALS_DATA"):  # an explicit setting is the only place looked at
        explicit = Path(os.environ["DP_MARGINALS_DATA"])
        return explicit.resolve() if (explicit / "adult" / "domain.json").is_file() else None
    candidates = []
    here = Path(__file__).resolve().parent.parent
    for base in (Path.cwd(), here):
        candidates += [base / ".." / "shared" / "data", base / "shared" / "data"]
    for c in candidates:
        if (c / "adult" / "domain.json").is_file():
            return c.resolve()
    return None


def load_bundled(name: str, split: str = "train", limit: int | None = None) -> Dataset:
    """Load ``<data_dir>/<name>/<split>.csv`` with its ``domain.json`` (first ``limit`` rows if given); the
    domain of a bundled set declares its `ORDINAL` attributes when its file says nothing about order."""
    root = data_dir()
    if root is None:
        raise FileNotFoundError(
            "the bundled data folder (../shared/data) is absent; set DP_MARGINALS_DATA or use marginals.datasets.demo_dataset()"
        )
    folder = root / name
    if not folder.is_dir():
        known = sorted(p.name for p in root.iterdir() if (p / "domain.json").is_file())
        raise FileNotFoundError(f"no data set {name!r} under {root}; available: {known}")
    domain = Domain.load(folder / "domain.json")
    if domain.ordinal is None and name in ORDINAL:
        domain = domain.with_ordinal(ORDINAL[name])
    df = pd.read_csv(folder / f"{split}.csv", nrows=limit)
    return Dataset(df, domain)


def load_adult_raw(split: str = "train", keep_markers: bool = False) -> pd.DataFrame:
    """The original UCI Adult rows (``adult.data`` or ``adult.test`` under ``<data_dir>/adult-raw``) as raw
    values; ``"?"`` becomes NaN unless ``keep_markers``. Encode them with a `marginals.Discretizer`."""
    files = {"train": "adult.data", "test": "adult.test"}
    if split not in files:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = data_dir()
    path = None if root is None else root / "adult-raw" / files[split]
    if path is None or not path.is_file():
        where = "the bundled data folder (../shared/data) is absent" if root is None else f"{path} is absent"
        raise FileNotFoundError(f"cannot load the raw adult data: {where}; set DP_MARGINALS_DATA")
    with open(path, encoding="utf-8") as fh:
        header = 1 if fh.readline().startswith("|") else 0  # adult.test opens with "|1x3 Cross validator"
    return pd.read_csv(
        path, header=None, names=list(ADULT_RAW_COLUMNS), skiprows=header, skipinitialspace=True,
        na_values=[] if keep_markers else ["?"], keep_default_na=False,
    )

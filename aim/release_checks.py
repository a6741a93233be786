"""Reading a release file defensively: every problem of a foreign, truncated, corrupt or crafted
file is a `ReleaseFormatError` whose one-line message names the file, and nothing large is
allocated before the header has been checked.

The order matters: (1) the file must be a zip archive whose members are plain ``.npy`` arrays
(no pickle); (2) the JSON header is parsed (capped at `MAX_HEADER_MB`) and checked — its types,
the domain (sizes capped by `marginals.domain.MAX_LEVELS`), every clique against the domain,
finite positive sigmas and total, the ledger, the configuration (its parts and their fields, see
`aim.release_config`; the run's epsilon / delta against the ledger: delta = the ledger's
conversion delta + the ``threshold_delta`` reserved for thresholded histograms, which their
charges may not exceed; AIM's share within the ledger's budget), and the spec (a valid
`marginals.Discretizer` spec whose domain is exactly the release's); (3) the cells the
measurements, the potentials and the model's junction tree will take are summed from the header
alone and capped (`MAX_RELEASE_MB`); (4) each array's ``.npy`` header (shape, dtype) is checked
against what the header promises before its data is read. Every header field a consumer reads is
type-checked here (round entries, ledger charges), so that a crafted field is a format error at
load, never a TypeError later in ``report`` or ``inspect``.

A loaded release may still describe tables too large to compute (a 3M x 3M pair of attributes
loads in 100 MB, its pair marginal is 65 TiB): every consumer (marginals, fits, reports,
synthetic rows) calls `marginals.limits.check_cells` / `check_synthetic_size` with what it will
allocate first, and gets a `TooLargeError` (a ValueError) instead of a MemoryError.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from typing import Any

import numpy as np

from marginals.spec.discretize import Discretizer
from marginals.domain import Domain
from marginals.limits import MAX_WORK_MB, size_text
from marginals.privacy import Accountant, BudgetExceeded, cdp_rho
from pgm.junction_tree import model_size_mb

from .release_config import MECHANISM_PART, SPEC_PART, check_config

#: most memory (MiB of float64 cells) a release may need: its arrays plus the model's junction
#: tree. A crafted 2 MB file could otherwise declare gigabytes of (compressible) cells.
MAX_RELEASE_MB = MAX_WORK_MB
#: largest JSON header accepted (MiB).
MAX_HEADER_MB = 64.0
#: relative tolerance when the ledger's rho is recomputed from the configuration's (eps, delta).
RHO_RTOL = 1e-9
#: round-log fields and their JSON types (other keys may hold a scalar or a list of scalars).
ROUND_NUMBERS = ("sigma", "eps_select", "rho_used", "model_size_mb", "seconds")
ROUND_INTEGERS = ("round", "candidates", "iterations")


class ReleaseFormatError(ValueError):
    """A file that is not a readable release: wrong format or version, truncated, corrupt or inconsistent."""


def _fail(path: Any, message: str) -> ReleaseFormatError:
    return ReleaseFormatError(f"{path}: {message}")


def open_archive(path: str | os.PathLike) -> zipfile.ZipFile:
    """The release as a zip archive (a missing file raises FileNotFoundError as usual)."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic[:2] != b"PK":
        raise _fail(path, "not a release file (not an .npz archive)")
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise _fail(path, f"not a readable release file (truncated or corrupt archive: {exc})") from None


def _npy_header(zf: zipfile.ZipFile, name: str, path: Any) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from the ``.npy`` header of member ``name`` (its data is not read)."""
    member = f"{name}.npy"
    if member not in zf.namelist():
        raise _fail(path, f"not a readable release file (missing array {name!r})")
    with zf.open(member) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        except ValueError as exc:
            raise _fail(path, f"not a readable release file (array {name!r}: {exc})") from None
    if dtype.hasobject:
        raise _fail(path, f"not a release file (array {name!r} holds Python objects; releases never do)")
    return tuple(shape), dtype


def read_array(zf: zipfile.ZipFile, name: str, path: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Member ``name`` as float64 after checking that its header promises exactly ``shape``."""
    found, dtype = _npy_header(zf, name, path)
    if found != tuple(shape):
        raise _fail(path, f"array {name!r} has shape {found}, expected {tuple(shape)} from the domain")
    if dtype.kind != "f" or dtype.itemsize != 8:
        raise _fail(path, f"array {name!r} has dtype {dtype}, expected float64")
    with zf.open(f"{name}.npy") as fh:
        return np.lib.format.read_array(fh, allow_pickle=False)


def read_header(zf: zipfile.ZipFile, path: Any) -> dict:
    """The parsed JSON header (its size checked before it is read)."""
    if "header.npy" not in zf.namelist():
        raise _fail(path, "not a release file (no header)")
    shape, dtype = _npy_header(zf, "header", path)
    if shape != () or dtype.kind != "U":
        raise _fail(path, f"not a release file (header is a {dtype} array of shape {shape}, not a string)")
    if dtype.itemsize > MAX_HEADER_MB * 2**20:
        raise _fail(path, f"release header of {dtype.itemsize / 2**20:.0f} MiB is larger than {MAX_HEADER_MB:g} MiB")
    with zf.open("header.npy") as fh:
        text = str(np.lib.format.read_array(fh, allow_pickle=False))
    try:
        header = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not a readable release file (header is not valid JSON: {exc})") from None
    return header


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive(value: Any) -> bool:
    return _number(value) and math.isfinite(value) and value > 0


def _cliques(raw: Any, domain: Domain, where: str, path: Any) -> list[tuple[str, ...]]:
    if not isinstance(raw, list):
        raise _fail(path, f"{where} must be a list of cliques, got {type(raw).__name__}")
    out = []
    for c in raw:
        if not isinstance(c, list) or not c or not all(isinstance(a, str) for a in c):
            raise _fail(path, f"{where}: {c!r} is not a non-empty list of attribute names")
        try:
            out.append(domain.check(c))
        except ValueError as exc:
            raise _fail(path, f"{where}: {exc}") from None
    return out


def check_header(header: Any, path: Any) -> dict:
    """Validate the parsed header (format and version already checked) and return the pieces
    `aim.storage` builds a release from: domain, measurement cliques and sigmas, model cliques and
    total, ledger (the configuration is checked in place). Raises `ReleaseFormatError` naming the
    file and the problem."""
    for key, kind in (("domain", dict), ("measurements", list), ("model", dict), ("ledger", dict),
                      ("rounds", list), ("config", dict)):
        if not isinstance(header.get(key), kind):
            raise _fail(path, f"release header: {key!r} must be a JSON {kind.__name__}, "
                              f"got {type(header.get(key)).__name__}")
    for r in header["rounds"]:
        _check_round(r, path)
    _check_config(header["config"], path)
    try:
        domain = Domain.from_dict(header["domain"], header.get("ordinal"))
    except ValueError as exc:
        raise _fail(path, f"release domain: {exc}") from None

    entries = header["measurements"]
    if not all(isinstance(m, dict) for m in entries):
        raise _fail(path, "release header: each measurement must be a JSON object")
    measured = _cliques([m.get("clique") for m in entries], domain, "measurement clique", path)
    sigmas = []
    for clique, m in zip(measured, entries):
        if not _positive(m.get("sigma")):
            raise _fail(path, f"measurement over {clique}: sigma must be a finite number > 0, got {m.get('sigma')!r}")
        sigmas.append(float(m["sigma"]))

    model = header["model"]
    cliques = _cliques(model.get("cliques"), domain, "model clique", path)
    if len(set(cliques)) != len(cliques):
        raise _fail(path, "model cliques repeat")
    if not _positive(model.get("total")):
        raise _fail(path, f"model total must be a finite number > 0, got {model.get('total')!r}")
    info = model.get("info", {})
    if not isinstance(info, dict) or not all(v is None or isinstance(v, (str, int, float)) for v in info.values()):
        raise _fail(path, "model info must be a JSON object of numbers or text")

    try:
        ledger = Accountant.from_dict(header["ledger"])
    except (ValueError, TypeError, KeyError, AttributeError, BudgetExceeded) as exc:
        raise _fail(path, f"release ledger is invalid ({type(exc).__name__}: {exc})") from None
    _check_charges(ledger, path)
    _check_budget(header["config"], ledger, path)
    _check_unit(header["config"], ledger, path)

    # memory: measurements + potentials as stored, plus the junction tree the model will build
    cells = sum(domain.size(c) for c in measured) + sum(domain.size(c) for c in cliques)
    need_mb = cells * 8 / 2**20 + (model_size_mb(domain, cliques) if cliques else 0.0)
    if need_mb > MAX_RELEASE_MB:
        raise _fail(path, f"the release would need {need_mb:,.0f} MiB of tables, more than the "
                          f"{MAX_RELEASE_MB:,.0f} MiB allowed (a corrupt or crafted file?)")
    return {"domain": domain, "measured": measured, "sigmas": sigmas, "cliques": cliques,
            "total": float(model["total"]), "info": dict(model.get("info", {})), "ledger": ledger}


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool)) or (_number(value) and math.isfinite(value))


def _check_round(r: Any, path: Any) -> None:
    """One entry of the rounds log: known fields typed, any other a JSON scalar or list of scalars."""
    if not isinstance(r, dict):
        raise _fail(path, f"release header: each round must be a JSON object, got {r!r:.80}")
    for key, value in r.items():
        if key in ROUND_NUMBERS:
            ok = _number(value) and math.isfinite(value)
        elif key in ROUND_INTEGERS:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        elif key == "clique":
            ok = isinstance(value, list) and all(isinstance(a, str) for a in value)
        elif key == "annealed":
            ok = isinstance(value, bool)
        else:
            ok = _scalar(value) or (isinstance(value, list) and all(_scalar(v) for v in value))
        if not ok:
            raise _fail(path, f"release header: round field {key!r} has the wrong type or value ({value!r:.60})")


def _check_charges(ledger: Accountant, path: Any) -> None:
    """Each ledger charge's label and mechanism are text and its parameters JSON scalars."""
    for c in ledger.charges:
        if not (isinstance(c.label, str) and isinstance(c.mechanism, str) and isinstance(c.params, dict)
                and all(isinstance(k, str) and _scalar(v) for k, v in c.params.items())):
            raise _fail(path, f"ledger charge {c.label!r:.60}: label and mechanism must be text and its "
                              "parameters JSON numbers or text")


def _check_unit(config: dict, ledger: Accountant, path: Any) -> None:
    """The privacy unit: the configuration's (unit, max_rows_per_unit) is the ledger's, and every
    charge that records a sensitivity was priced for its k rows (a release may not claim a unit
    its noise was not calibrated for)."""
    part = config.get(MECHANISM_PART) or {}
    stated = (part.get("unit"), part.get("max_rows_per_unit"))
    unit = ledger.unit
    if MECHANISM_PART in config and stated != ((None, None) if unit is None else (unit.column, unit.max_rows)):
        raise _fail(path, f"config privacy unit {stated!r} differs from the ledger's {None if unit is None else unit.to_dict()!r}")
    for c in ledger.charges:
        if "sensitivity" in c.params and c.params["sensitivity"] != ledger.sensitivity:
            raise _fail(path, f"ledger charge {c.label!r:.60}: priced for sensitivity {c.params['sensitivity']!r}, "
                              f"but the privacy unit holds up to {ledger.sensitivity} row(s)")
        if "rows_per_unit" in c.params and c.params["rows_per_unit"] != ledger.sensitivity:  # a derived L2 bound's k
            raise _fail(path, f"ledger charge {c.label!r:.60}: derived for {c.params['rows_per_unit']!r} row(s) per unit, "
                              f"but the privacy unit holds up to {ledger.sensitivity} row(s)")


def _check_config(config: dict, path: Any) -> None:
    """The configuration's parts and their fields (`aim.release_config.check_config`)."""
    mechanism = config.get(MECHANISM_PART)
    if isinstance(mechanism, dict) and not isinstance(mechanism.get("workload", []), list):
        raise _fail(path, "release header: config workload must be a JSON list")
    try:
        check_config(config)
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"release config: {exc}") from None


def _threshold_delta(reserved: Any, ledger: Accountant, path: Any) -> float:
    """The delta reserved for thresholded histograms, after checking that their charges fit in it."""
    if not (_number(reserved) and 0 <= reserved < 1):
        raise _fail(path, f"config threshold_delta must lie in [0, 1), got {reserved!r}")
    used = []
    for c in ledger.charges:
        d = c.params.get("delta", 0.0)
        if not (_number(d) and 0 <= d < 1):
            raise _fail(path, f"ledger charge {c.label!r}: delta must lie in [0, 1), got {d!r}")
        used.append(float(d))
    if math.fsum(used) > reserved * (1 + 1e-9):
        raise _fail(path, f"the ledger's thresholded histograms use delta {math.fsum(used):.6g}, more than the "
                          f"{reserved:.6g} the configuration reserves (threshold_delta)")
    return float(reserved)


def _check_budget(config: dict, ledger: Accountant, path: Any) -> None:
    """The run's (epsilon, delta), when the configuration holds them, must be what the ledger's
    budget is; with a spec part, AIM's share must fit in it at the ledger's delta."""
    spec = config.get(SPEC_PART) or {}
    reserved = _threshold_delta(spec.get("threshold_delta", 0.0), ledger, path)
    budget = spec or config.get(MECHANISM_PART) or {}  # the whole run's (epsilon, delta)
    if "delta" in budget:
        delta = budget["delta"]
        if not (_positive(delta) and delta < 1):
            raise _fail(path, f"config delta must lie in (0, 1), got {delta!r}")
        if ledger.delta is None or not math.isclose(float(delta), float(ledger.delta) + reserved, rel_tol=1e-12):
            extra = f" + threshold_delta {reserved!r}" if reserved else ""
            raise _fail(path, f"config delta {delta!r} does not match the ledger's delta {ledger.delta!r}{extra}")
    if "epsilon" in budget:
        _check_epsilon(budget["epsilon"], ledger, path)
    if spec:
        _check_aim_share(config[MECHANISM_PART], spec, ledger, path)


def _check_epsilon(eps: Any, ledger: Accountant, path: Any) -> None:
    if not _positive(eps):
        raise _fail(path, f"config epsilon must be a finite number > 0, got {eps!r}")
    if not (_positive(ledger.delta) and ledger.delta < 1):
        raise _fail(path, f"config epsilon {eps!r} given but the ledger has no valid delta ({ledger.delta!r})")
    try:
        rho = cdp_rho(eps, ledger.delta)
    except ValueError as exc:
        raise _fail(path, f"config epsilon: {exc}") from None
    if not math.isclose(rho, ledger.rho, rel_tol=RHO_RTOL):
        raise _fail(path, f"config (epsilon={eps:g}, delta={ledger.delta:g}) means rho={rho:.9g}, but the "
                          f"ledger's budget is rho={ledger.rho:.9g}")


def _check_aim_share(mechanism: dict, spec: dict, ledger: Accountant, path: Any) -> None:
    """A raw run's AIM ran at the ledger's delta, and its budget plus the spec's rho fit in the ledger's."""
    delta = mechanism.get("delta")
    if not (_positive(delta) and math.isclose(float(delta), float(ledger.delta), rel_tol=1e-12)):
        raise _fail(path, f"config: the mechanism's delta {delta!r} is not the ledger's {ledger.delta!r}")
    need = cdp_rho(mechanism["epsilon"], ledger.delta) + spec["spec_rho"]
    if need > ledger.rho * (1 + RHO_RTOL):
        raise _fail(path, f"config: AIM's budget (epsilon {mechanism['epsilon']:g}) plus the spec's rho "
                          f"{spec['spec_rho']:.6g} is rho={need:.9g}, more than the ledger's {ledger.rho:.9g}")


def check_potential(values: np.ndarray, clique: tuple[str, ...], path: Any) -> None:
    """Log-potentials may be -inf (structural zeros) but not NaN or +inf, and not all -inf."""
    if np.isnan(values).any() or np.isposinf(values).any():
        raise _fail(path, f"model potential over {clique} holds NaN or +inf")
    if values.size and not np.isfinite(values).any():
        raise _fail(path, f"model potential over {clique} is -inf everywhere")


def check_spec(spec: Any, version: int, domain: Domain, path: Any) -> dict | None:
    """The header's spec (None when absent), after checking it is a valid discretization spec
    whose domain is exactly the release's (names, order and sizes)."""
    if spec is None:
        return None
    if version < 3:
        raise _fail(path, f"release format version {version} has no spec, but the header holds one")
    if not isinstance(spec, dict):
        raise _fail(path, f"release spec must be a JSON object, got {type(spec).__name__}")
    try:
        disc = Discretizer.from_spec(spec)
    except ValueError as exc:
        raise _fail(path, f"release spec is invalid: {exc}") from None
    if disc.domain != domain:
        raise _fail(path, f"release spec describes {disc.domain!r}, not the release's domain {domain!r}")
    return disc.to_spec()

"""A release's one-file, versioned storage, on its parts (the fields of `aim.release.Release`):
`write_release` and `read_release`.

File format: an ``.npz`` (no pickle) holding a JSON header (``header``) plus one array per
measurement (``measurement_<i>``) and per model potential (``potential_<i>``); written atomically.
Version 3 added the optional ``spec``; version 4 stores the configuration in parts
(`aim.release_config`) and may hold the domain's public ``ordinal`` metadata (`marginals.Domain`;
absent from older files); version 5 is written only for a person-level release: its ledger and
configuration state the privacy unit (column and rows per unit, `marginals.units`), which older
readers would ignore (a row-level release is still written as version 4); version 6 is written only
for a release that holds an analysis (`aim.analysis`: the regression it serves, its points and noisy
gradients, as ``analysis_*`` arrays), which older readers would drop. Versions 2 and 3 are still read, their flat configuration mapped to the
parts (`aim.release_config.from_flat`). No seed or generator state is ever stored, and no private
rows: everything here is post-processing of the DP measurements.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import numpy as np

from marginals.domain import Domain
from marginals.files import write_bytes_atomic
from marginals.measurement import Measurement
from marginals.privacy import Accountant
from pgm.model import Model

from . import release_checks
from .analysis import AnalysisRecord
from .release_checks import ReleaseFormatError
from .release_config import from_flat

FORMAT = "dp-marginals-release"
VERSION = 4  # 1 stored the seed that undoes the noise: such files are refused; 2 had no spec; 2 and 3 a flat config
#: the version of a person-level release (a privacy unit in its ledger and configuration).
UNIT_VERSION = 5
#: the version of a release holding an analysis (a unit may come with it).
ANALYSIS_VERSION = 6
READABLE_VERSIONS = (2, 3, 4, UNIT_VERSION, ANALYSIS_VERSION)


def write_release(path: str | os.PathLike, *, domain: Domain, measurements: list[Measurement], model: Model,
                  ledger: Accountant, rounds: list[dict], config: dict, private: bool, spec: dict | None,
                  analysis: Any = None) -> None:
    """Write a release's parts to one ``.npz`` file atomically (see the module docstring)."""
    header = {
        "format": FORMAT,
        "version": ANALYSIS_VERSION if analysis is not None else VERSION if ledger.unit is None else UNIT_VERSION,
        "domain": domain.to_dict(),
        "measurements": [{"clique": list(m.clique), "sigma": m.sigma} for m in measurements],
        "model": {
            "cliques": [list(c) for c in model.cliques],
            "total": model.total,
            "info": {k: v for k, v in model.info.items() if isinstance(v, (int, float, str, bool))},
        },
        "ledger": ledger.to_dict(),
        "rounds": rounds,
        "config": config,
        "private": bool(private),
        "spec": spec,
    }
    if domain.ordinal is not None:  # public metadata: which attributes are ordered (absent from older files)
        header["ordinal"] = domain.ordinal_json()
    if analysis is not None:
        header["analysis"] = analysis.header()
    arrays = {"header": np.array(json.dumps(header))}
    if analysis is not None:
        arrays.update(analysis.arrays())
    for i, m in enumerate(measurements):
        arrays[f"measurement_{i}"] = m.noisy_counts
    for i, factor in enumerate(model.potentials.values()):
        arrays[f"potential_{i}"] = factor.values
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    write_bytes_atomic(path, buffer.getvalue())


def read_release(path: str | os.PathLike) -> dict[str, Any]:
    """The parts of a file written by `write_release` (keyword arguments of `Release`). Checks the
    format name and version, then everything a foreign or crafted file could get wrong before
    allocating (see `aim.release_checks`); any problem is a `ReleaseFormatError` naming the file."""
    try:
        return _read(path)
    except (ReleaseFormatError, FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as exc:  # zip, npz, JSON or key errors: a truncated or foreign file
        raise ReleaseFormatError(f"{path}: not a readable release file ({type(exc).__name__}: {exc})") from exc


def _check_version(header: Any, path: str | os.PathLike) -> None:
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        found = header.get("format") if isinstance(header, dict) else None
        raise ReleaseFormatError(f"{path}: not a release file (format {found!r})")
    if header.get("version") not in READABLE_VERSIONS:
        hint = " (version 1 files stored the seed that undoes their noise: re-run the mechanism)" if header.get("version") == 1 else ""
        raise ReleaseFormatError(
            f"{path}: release format version {header.get('version')} is not supported (expected {VERSION}){hint}"
        )


def _read(path: str | os.PathLike) -> dict[str, Any]:
    with release_checks.open_archive(path) as npz:
        header = release_checks.read_header(npz, path)
        _check_version(header, path)
        if header["version"] < 4:
            header["config"] = from_flat(header.get("config"))
        if header["version"] < 5 and isinstance(header.get("ledger"), dict) and "unit" in header["ledger"]:
            raise ReleaseFormatError(f"{path}: a privacy unit in a version {header['version']} file (it needs version {UNIT_VERSION})")
        checked = release_checks.check_header(header, path)
        domain = checked["domain"]
        spec = release_checks.check_spec(header.get("spec"), header["version"], domain, path)
        measurements = [
            Measurement(c, release_checks.read_array(npz, f"measurement_{i}", path, domain.project(c).shape), sigma)
            for i, (c, sigma) in enumerate(zip(checked["measured"], checked["sigmas"]))
        ]
        cliques = checked["cliques"]
        potentials = [
            release_checks.read_array(npz, f"potential_{i}", path, domain.project(c).shape)
            for i, c in enumerate(cliques)
        ]
        analysis = _read_analysis(npz, header, domain, path)
    for c, p in zip(cliques, potentials):
        release_checks.check_potential(p, c, path)
    model = Model(domain, cliques, potentials, checked["total"], info=checked["info"])
    private = header.get("private")
    if not isinstance(private, bool):
        raise ReleaseFormatError(f"{path}: header field 'private' must be true or false, got {private!r}")
    return {
        "domain": domain,
        "measurements": measurements,
        "model": model,
        "ledger": checked["ledger"],
        "rounds": header["rounds"],
        "config": header["config"],
        "private": private,
        "spec": spec,
        "analysis": analysis,
    }


def _read_analysis(zf: Any, header: dict, domain: Domain, path: str | os.PathLike) -> Any:
    """The analysis record of a version-6 file (None when it holds none), its arrays' shapes checked first."""
    part = header.get("analysis")
    if part is None:
        return None
    if header["version"] < ANALYSIS_VERSION:
        raise ReleaseFormatError(f"{path}: an analysis in a version {header['version']} file (it needs version {ANALYSIS_VERSION})")
    try:
        attrs, widths = list(part["features"]), [int(w) for w in part["widths"]]
        if len(attrs) != len(widths) or any(a not in domain.attrs for a in attrs + [part["target"]]):
            raise ValueError("its attributes are not the domain's")
        if any(not 1 <= w <= 4 * domain[a] + 64 for a, w in zip(attrs, widths)):
            raise ValueError("an encoding is wider than its attribute allows")
        p = int(bool(part["intercept"])) + sum(widths)
        arrays = {"analysis_target_values": release_checks.read_array(zf, "analysis_target_values", path,
                                                                      (domain[part["target"]],))}  # fmt: skip
        for i, (a, w) in enumerate(zip(attrs, widths)):
            arrays[f"analysis_feature_{i}"] = release_checks.read_array(zf, f"analysis_feature_{i}", path, (w, domain[a]))
        for i in range(len(part["statistics"])):
            for kind in ("point", "statistic"):
                arrays[f"analysis_{kind}_{i}"] = release_checks.read_array(zf, f"analysis_{kind}_{i}", path, (p,))
        record = AnalysisRecord.from_parts(part, arrays)
        record.spec.check_domain(domain)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReleaseFormatError(f"{path}: the release's analysis is invalid ({type(exc).__name__}: {exc})") from None
    return record

"""`pgm` is pure post-processing: it imports from `marginals` only the modules that hold no rows
(the domain, the measurement record, the sampling randomness), and nothing from further down the
pipeline (`aim`, `ddssp`). Module-level and lazy imports alike."""

from __future__ import annotations

import ast
from pathlib import Path

PGM = Path(__file__).resolve().parent.parent / "pgm"
ROWLESS = {"marginals.domain", "marginals.measurement", "marginals.randomness"}


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports anywhere (relative imports skipped)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update(f"{node.module}.{alias.name}" if node.module == "marginals" else node.module
                         for alias in node.names)
    return names


def test_pgm_imports_only_the_rowless_marginals_modules_and_nothing_downstream():
    files = sorted(PGM.rglob("*.py"))
    assert len(files) > 10 and PGM / "kernels" / "threads.py" in files
    seen = set()
    for path in files:
        for name in imported_modules(path):
            package = name.split(".")[0]
            assert package not in ("aim", "ddssp"), f"{path.name} imports {name}"
            if package == "marginals":
                assert name in ROWLESS, f"{path.name} imports {name}"
                seen.add(name)
    assert seen == ROWLESS  # the check sees pgm's real imports

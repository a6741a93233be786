"""The layout the design fixes, checked on the source: data flows one way (marginals < pgm < aim <
ddssp) with no circle between modules (lazy imports included), no function over 60 lines and no
module over 400 lines in the four packages, and each contract written once."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("marginals", "pgm", "aim", "ddssp")
RANK = {p: i for i, p in enumerate(PACKAGES)}
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules of the four packages that one import statement loads (the deepest one named)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{a.name}" for a in node.names]
    out = []
    for t in names:
        while t not in MODULES and "." in t:
            t = t.rsplit(".", 1)[0]
        if t in MODULES and t != name:
            out.append(t)
    return out


@functools.lru_cache(maxsize=1)
def import_graph() -> nx.DiGraph:
    """Module -> module imports within the four packages, lazy (function-level) imports included."""
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph.add_edges_from((name, t) for t in _targets(name, path, node))
    return graph


def test_no_import_circle_between_modules():
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, [" -> ".join(c + [c[0]]) for c in cycles[:10]]


def test_no_import_up_the_chain():
    up = [(a, b) for a, b in import_graph().edges if RANK[b.split(".")[0]] > RANK[a.split(".")[0]]]
    assert not up


def test_the_graph_sees_imports():  # a control: the checks above would pass on an empty graph
    graph = import_graph()
    assert graph.has_edge("aim.mechanism", "pgm.estimation") and graph.number_of_edges() > 100


def test_pgm_reads_no_rows():
    readers = {"marginals.dataset", "marginals.tables", "marginals.distributed", "marginals.datasets"}
    graph = import_graph()
    reached = {m for p in MODULES if p.startswith("pgm") for m in nx.descendants(graph, p)}
    assert not reached & readers and not any(m.startswith("marginals.spec") for m in reached)


@pytest.mark.parametrize("package", PACKAGES)
def test_functions_and_modules_are_short(package):
    long_functions, long_modules = [], []
    for path in sorted((ROOT / package).rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long_modules.append((str(path.relative_to(ROOT)), len(text.splitlines())))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                    long_functions.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long_modules and not long_functions, (long_modules, long_functions)


def _source() -> str:
    return "\n".join(p.read_text() for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")))


def test_contracts_are_written_once():
    source = _source()
    assert "store_params(self, locals())" not in source
    assert not re.search(r"from (\.|marginals\.)mechanisms import[^\n]*\bMeasurement\b", source)
    assert "ModelSource" not in (ROOT / "ddssp" / "bayes" / "resampling.py").read_text()


def test_the_gaussian_privacy_map_is_written_once():
    pattern = re.compile(r"\*\* ?2 ?/ ?\(2(\.0)? ?\* ?(Fraction\()?\w*(sigma|variance|rho)")
    homes = {str(p.relative_to(ROOT)) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
             if pattern.search(p.read_text())}
    assert homes == {"marginals/maps.py"}


def test_the_main_job_installs_no_test_only_dependency():
    """`scripts/main.sh` installs the package with the `progress` extra only (issue 24: a light first run)."""
    import re
    import tomllib

    scripts = ROOT / "scripts"
    main, venv = (scripts / "main.sh").read_text(), (scripts / "_venv.sh").read_text()
    assert "_venv.sh" in main and not re.search(r"^\s*extras=", main, re.M)  # the main job takes the default
    default = re.search(r'^extras="\$\{extras:-([\w,]+)\}"', venv, re.M)
    assert default is not None and default.group(1) == "progress"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    heavy = {"pytest", "jax", "numpyro", "dask", "pyarrow", "hypothesis", "matplotlib"}
    names = {re.split(r"[\[<>=~ ]", dep)[0] for dep in extras["progress"]}
    assert names == {"tqdm"} and not names & heavy
    assert heavy <= {re.split(r"[\[<>=~ ]", dep)[0] for dep in extras["test"]}  # a control: the test extra holds them

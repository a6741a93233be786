"""The HTML quality report (`aim.report.write_report`, ``dp-marginals report``): the page
is well-formed HTML, embeds its images as PNG data URIs (the same bytes as the PNG files), lists
every ledger charge, flags an insecure-seeded release as NOT PRIVATE, escapes names from user
files, and has the non-private diagnostic (owner-only files) only when the private rows are given."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import os
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from aim import AIM  # noqa: E402
from aim.report import write_report  # noqa: E402
from aim.report.build import label_function, marginal_errors, total_variation  # noqa: E402
from aim.report.plots import MissingExtraError, _pair_sigmas, clique_graph_figure, require_matplotlib  # noqa: E402
from ddssp.cli import main  # noqa: E402
from marginals import Dataset, Domain  # noqa: E402
from marginals.measurement import Measurement  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VOID = {"meta", "img", "br", "hr", "link", "input", "col", "wbr"}
# names from a user's file: markup characters (escaped in the HTML) and mathtext (escaped in the plots)
ODD = 'tag<b>&"q"'
MATH = r"cost$\notacommand$"


class Page(HTMLParser):
    """Parses a page, checking that every element is closed in order; keeps text, images and tables."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.images: list[str] = []
        self.alts: list[str] = []
        self.ids: list[str] = []
        self.text: list[str] = []
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None
        self.feed(source)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
            self.alts.append(attrs["alt"])
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
        else:
            self.stack.pop()
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)

    def table_with(self, header: str) -> list[list[str]]:
        """The rows (header row first) of the one table whose header row holds ``header``."""
        found = [t for t in self.tables if t and header in t[0]]
        assert len(found) == 1, [t[0] for t in self.tables]
        return found[0]


def _parse(path: Path) -> Page:
    source = path.read_text(encoding="utf-8")
    assert source.startswith("<!DOCTYPE html>")
    page = Page(source)
    assert not page.errors and not page.stack, (page.errors, page.stack)
    return page


def _png_bytes(uri: str) -> bytes:
    prefix = "data:image/png;base64,"
    assert uri.startswith(prefix)
    data = base64.b64decode(uri[len(prefix):], validate=True)
    assert data.startswith(PNG_SIGNATURE)
    return data


@pytest.fixture(scope="module")
def tiny():
    """A correlated table over four attributes (two with awkward names) and an AIM release of it."""
    rng = np.random.default_rng(7)
    n = 600
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (b > 1).astype(int) ^ (rng.random(n) < 0.1)
    d = rng.integers(0, 5, n)
    domain = Domain(("a", ODD, "c", MATH), (3, 4, 2, 5))
    data = Dataset(pd.DataFrame({"a": a, ODD: b, "c": c, MATH: d}), domain)
    release = AIM(2.0, 1e-9, rounds=12, insecure_seed=3).run(data)
    return data, release


@pytest.fixture(scope="module")
def reports(tiny, tmp_path_factory):
    """The public report and the one with the private data, written once for several tests."""
    data, release = tiny
    folder = tmp_path_factory.mktemp("reports")
    public = write_report(release, folder / "public.html", png_dir=True)
    private = write_report(release, folder / "private.html", data, synthetic=release.synthetic_data(rng=1), worst=2,
                           png_dir=True)
    return public, private


def test_public_report_parses_and_embeds_the_png_files(reports):
    public, _ = reports
    page = _parse(public)
    files = sorted((public.parent / "public_files").glob("*.png"))
    assert len(files) == len(page.images) == 2  # budget and rounds, clique graph
    assert [_png_bytes(uri) for uri in page.images] == [f.read_bytes() for f in files]
    assert {"summary", "ledger", "rounds", "cliques"} <= set(page.ids)


def test_the_ledger_lists_every_charge(tiny, reports):
    _, release = tiny
    page = _parse(reports[0])
    header, *rows = page.table_with("running rho")
    charges = release.ledger.charges
    assert [r[header.index("label")] for r in rows] == [c.label for c in charges]
    assert [r[header.index("mechanism")] for r in rows] == [c.mechanism for c in charges]
    shown = np.array([float(r[header.index("rho")]) for r in rows])
    assert shown == pytest.approx([c.rho for c in charges], rel=1e-3)
    running = np.array([float(r[header.index("running rho")]) for r in rows])
    assert running[-1] == pytest.approx(release.ledger.spent, rel=1e-3)
    assert np.all(np.diff(running) >= 0)


def test_the_configuration_table_shows_the_mechanism_part(tiny, reports):
    _, release = tiny
    page = _parse(reports[0])
    header, *rows = page.table_with("setting")
    settings = {r[0]: r[1] for r in rows}
    assert settings["mechanism"] == "AIM" and "AIM release over 4 attributes" in page.all_text
    shown = {k for k in settings if not k.startswith("model.")}
    assert shown == set(release.config["mechanism"]) - {"name", "workload"} | {"mechanism"}
    assert not any(k.startswith("spec.") for k in settings)  # no spec inferred under DP


def test_not_private_banner_only_for_an_insecure_seed(tiny, reports, tmp_path):
    _, release = tiny
    assert release.private is False
    assert "NOT PRIVATE" in _parse(reports[0]).all_text
    secure = dataclasses.replace(release, private=True)  # as if drawn from the secure source
    text = _parse(write_report(secure, tmp_path / "secure.html", png_dir=False)).all_text
    assert "NOT PRIVATE" not in text and "secure source" in text


def test_diagnostic_only_with_data(reports):
    public, private = reports
    assert "diagnostic" not in _parse(public).ids
    assert "NON-PRIVATE" not in public.read_text(encoding="utf-8")
    page = _parse(private)
    assert "diagnostic" in page.ids and "NON-PRIVATE DIAGNOSTIC" in page.all_text
    assert "do not publish" in page.all_text
    files = sorted((private.parent / "private_files").glob("*.png"))
    assert len(files) == len(page.images) == 2 + 1 + 4 + 2  # + error overview, four 1-way, the 2 worst 2-way
    assert [_png_bytes(uri) for uri in page.images] == [f.read_bytes() for f in files]
    if os.name == "posix":  # derived from the private rows: owner-only
        for f in [private, *files]:
            assert f.stat().st_mode & 0o777 == 0o600, f


def test_names_from_user_files_are_escaped(reports):
    _, private = reports
    source = private.read_text(encoding="utf-8")
    assert ODD not in source and "<b>" not in source  # only the escaped form reaches the page
    page = _parse(private)
    assert ODD in page.all_text and MATH in page.all_text


def _brute_tv(data: Dataset, model_table: np.ndarray, clique: tuple[str, ...]) -> float:
    """Total variation from row counts (pandas) and the model's table: the sum of the positive gaps."""
    df = data.to_df()
    shape = [data.domain[a] for a in clique]
    true = np.zeros(shape)
    for key, count in df.groupby(list(clique)).size().items():
        true[key if isinstance(key, tuple) else (key,)] = count
    q = np.clip(model_table, 0, None)
    return float(np.maximum(true / true.sum() - q / q.sum(), 0).sum())


def test_marginal_errors_cover_every_1_and_2_way_marginal_worst_first(tiny):
    data, release = tiny
    errors = marginal_errors(release, data)
    attrs = data.domain.attrs
    expected = {(a,) for a in attrs} | set(itertools.combinations(attrs, 2))
    assert {e.clique for e in errors} == expected and len(errors) == len(expected)
    assert all(e1.tv >= e2.tv for e1, e2 in zip(errors, errors[1:]))
    measured = [set(m.clique) for m in release.measurements]
    for e in errors:
        assert e.tv == pytest.approx(_brute_tv(data, release.marginal(e.clique), e.clique), abs=1e-12)
        assert e.cells == int(np.prod([data.domain[a] for a in e.clique]))
        assert e.measured == any(set(e.clique) <= m for m in measured)
        assert 0 <= e.tv <= 1


def test_the_error_table_shows_the_errors(tiny, reports):
    data, release = tiny
    header, *rows = _parse(reports[1]).table_with("TV model")
    errors = marginal_errors(release, data)
    assert [r[header.index("marginal")] for r in rows] == [" x ".join(e.clique) for e in errors]
    assert [float(r[header.index("TV model")]) for r in rows] == pytest.approx([e.tv for e in errors], rel=1e-3)
    assert "TV synthetic" in header


def test_total_variation_closed_forms():
    assert total_variation(np.array([5, 0]), np.array([0, 7])) == pytest.approx(1.0)
    assert total_variation(np.array([1, 3]), np.array([10, 30])) == pytest.approx(0.0)
    assert total_variation(np.array([1, 1, 2]), np.array([2, 1, 1])) == pytest.approx(0.25)
    assert total_variation(np.array([1, 0]), np.array([0, 0])) == pytest.approx(0.5)  # empty estimate: uniform


def test_clique_graph_of_wider_and_repeated_measurements():
    domain = Domain(("a", "b", "c", "d"), (3, 4, 2, 2))
    measurements = [Measurement(("a", "b"), np.zeros((3, 4)), 3.0), Measurement(("b", "a"), np.zeros((4, 3)), 4.0),
                    Measurement(("a", "b", "c"), np.zeros((3, 4, 2)), 2.0), Measurement(("d",), np.zeros(2), 1.0)]
    sigmas = _pair_sigmas(measurements)
    assert set(sigmas) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert sigmas[("a", "b")] == (pytest.approx((1 / 9 + 1 / 16 + 1 / 4) ** -0.5), True)  # inverse-variance sum
    assert sigmas[("a", "c")] == (pytest.approx(2.0), True)
    assert clique_graph_figure(domain, measurements).startswith(PNG_SIGNATURE)


def test_labels_hook(tiny, tmp_path):
    _, release = tiny
    names = label_function(release, lambda attr: ["low", "mid", "high"] if attr == "a" else None)
    assert names("a") == ["low", "mid", "high"] and names("c") == ["0", "1"]
    with pytest.raises(ValueError, match="'a'"):
        label_function(release, lambda attr: ["x"])("a")
    with pytest.raises(ValueError, match="'a': expected 3"):  # a bad hook: nothing is written
        write_report(release, tmp_path / "r.html", release.synthetic_data(rng=0), labels=lambda attr: ["only one"])
    assert not list(tmp_path.iterdir())
    carrier = dataclasses.replace(release)
    carrier.spec = type("Spec", (), {"labels": staticmethod(lambda attr: ["no", "yes"] if attr == "c" else None)})()
    assert label_function(carrier)("c") == ["no", "yes"] and label_function(carrier)("a") == ["0", "1", "2"]


def test_stale_diagnostic_pngs_are_removed(tiny, tmp_path):
    data, release = tiny
    folder = tmp_path / "pngs"
    write_report(release, tmp_path / "diag.html", data, png_dir=folder, worst=0)
    assert any("oneway" in f.name for f in folder.iterdir())
    mine = folder / "notes.png"
    mine.write_bytes(b"not ours")
    write_report(release, tmp_path / "public.html", png_dir=folder)
    left = sorted(f.name for f in folder.iterdir())
    assert "notes.png" in left and not any("oneway" in n or "twoway" in n or "errors" in n for n in left)


def test_bad_arguments(tiny, tmp_path):
    data, release = tiny
    with pytest.raises(ValueError, match="give data too"):
        write_report(release, tmp_path / "r.html", synthetic=data)
    with pytest.raises(ValueError, match="folder"):
        write_report(release, tmp_path)
    with pytest.raises(ValueError, match="worst"):
        write_report(release, tmp_path / "r.html", data, worst=-1)
    other = Dataset(data.to_df().assign(c=0), Domain(data.domain.attrs, (3, 4, 3, 5)))
    with pytest.raises(ValueError, match="'c' has 3 levels"):
        write_report(release, tmp_path / "r.html", other)
    with pytest.raises(TypeError, match="data"):
        write_report(release, tmp_path / "r.html", [[0, 0, 0, 0]])


def test_missing_matplotlib_names_the_extra(tiny, tmp_path, monkeypatch, capsys):
    _, release = tiny
    release.save(tmp_path / "r.npz")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(MissingExtraError, match=r"dp-marginals\[report\]"):
        require_matplotlib()
    assert main(["report", "--release", str(tmp_path / "r.npz"), "--out", str(tmp_path / "r.html")]) == 2
    assert "dp-marginals[report]" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


# --- the command line --------------------------------------------------------------------------


def test_cli_report(tiny, tmp_path, capsys):
    data, release = tiny
    release.save(tmp_path / "r.npz")
    assert main(["report", "--release", str(tmp_path / "r.npz"), "--quiet"]) == 0
    out = tmp_path / "r-report.html"
    page = _parse(out)
    assert len(page.images) == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["r-report.html", "r.npz"]
    assert main(["report", "--release", str(tmp_path / "r.npz"), "--out", str(tmp_path / "p.html"),
                 "--png-dir", str(tmp_path / "pngs"), "--quiet"]) == 0
    assert len(list((tmp_path / "pngs").glob("*.png"))) == 2
    assert "NOT PRIVATE" in page.all_text and "diagnostic" not in page.ids
    assert str(out) in capsys.readouterr().out


def test_cli_report_with_data(tiny, tmp_path, capsys):
    data, release = tiny
    release.save(tmp_path / "r.npz")
    pd.DataFrame({a: data.column(a) for a in data.domain.attrs}).to_csv(tmp_path / "private.csv", index=False)
    argv = ["report", "--release", str(tmp_path / "r.npz"), "--data", str(tmp_path / "private.csv"),
            "--out", str(tmp_path / "diag.html"), "--no-png", "--worst", "1", "--quiet"]
    assert main(argv) == 0
    page = _parse(tmp_path / "diag.html")
    assert "diagnostic" in page.ids and len(page.images) == 2 + 1 + 4 + 1
    assert "NON-PRIVATE" in capsys.readouterr().err  # warned even with --quiet
    assert sorted(p.name for p in tmp_path.iterdir()) == ["diag.html", "private.csv", "r.npz"]


@pytest.mark.parametrize("extra, message", [
    ([], "No such file"),
    (["--synthetic", "s.csv"], "--synthetic goes with --data"),
    (["--no-png", "--png-dir", "x"], "not both"),
    (["--out", "{release}"], "would overwrite"),
])
def test_cli_report_bad_input_exits_2(tiny, tmp_path, capsys, extra, message):
    _, release = tiny
    path = tmp_path / "r.npz"
    release.save(path)
    missing = ["--release", str(tmp_path / "missing.npz")] if not extra else ["--release", str(path)]
    argv = ["report", *missing, *[e.format(release=path) for e in extra], "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "dp-marginals: error:" in err and message in err and "Traceback" not in err


def test_cli_report_not_a_release(tmp_path, capsys):
    (tmp_path / "r.npz").write_text("a,b\n0,1\n")
    assert main(["report", "--release", str(tmp_path / "r.npz")]) == 2
    assert "not a release file" in capsys.readouterr().err


@pytest.mark.slow
def test_adult_report(tmp_path):
    """The 15-attribute adult release: every marginal in the table and a 1-way figure per attribute."""
    from benchmarks.data import data_dir

    if data_dir() is None:
        pytest.skip("the development data folder ../shared/data is absent (or set DP_MARGINALS_DATA)")
    folder = data_dir() / "adult"
    domain = Domain.load(folder / "domain.json")
    data = Dataset.from_csv(folder / "train.csv", domain)
    release = AIM(1.0, 1e-9, insecure_seed=0).run(data)
    page = _parse(write_report(release, tmp_path / "adult.html", data, png_dir=False))
    header, *rows = page.table_with("TV model")
    assert len(rows) == 15 + 15 * 14 // 2
    oneway = [alt.split(":")[0] for alt in page.alts if alt.endswith(": true vs model (non-private)") and " x " not in alt]
    assert oneway == list(domain.attrs)
    pairs = [e for e in marginal_errors(release, data) if len(e.clique) == 2]
    measured = [e.tv for e in pairs if e.measured]
    inferred = [e.tv for e in pairs if not e.measured]
    assert measured and inferred and np.mean(measured) < np.mean(inferred)  # measuring a marginal helps

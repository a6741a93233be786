"""AIM's progress report: a tqdm bar with the budget spent on a terminal, plain lines otherwise."""

from __future__ import annotations

import io
import re
import sys

import pytest

from aim import AIM
from marginals.datasets import demo_dataset


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def data():
    return demo_dataset(n=400)


def _run(data):
    return AIM(1.0, max_iters=4, final_iters=4, max_cells=100, insecure_seed=2, progress=True).run(data)


def test_plain_lines_show_the_budget_spent(data, capsys):
    release = _run(data)
    err = capsys.readouterr().err
    rho = release.ledger.rho
    lines = [ln for ln in err.splitlines() if ln.startswith("round")]
    assert len(lines) == len(release.rounds)
    for line, entry in zip(lines, release.rounds):
        spent, budget = map(float, re.search(r"rho ([0-9.e+-]+)/([0-9.e+-]+)", line).groups())
        assert spent == pytest.approx(entry["rho_used"], rel=1e-3)
        assert budget == pytest.approx(rho, rel=1e-3)
    assert "\r" not in err  # no bar redraws in a log file
    assert not re.search(r"\d\s*(s|sec|seconds)\b", err), err  # no timings: they depend on the private rows


def test_a_terminal_gets_a_tqdm_bar(data, monkeypatch):
    pytest.importorskip("tqdm")
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    release = _run(data)
    out = terminal.getvalue()
    assert "\r" in out and "% of budget" in out  # the bar redraws in place
    assert f"round {len(release.rounds)}," in out and "rho " in out
    assert "100% of budget" in out
    assert out.rstrip().splitlines()[-1].startswith(f"AIM done: {len(release.rounds)} rounds")
    assert not re.search(r"^round +\d", out, flags=re.M)  # no plain per-round lines
    assert not re.search(r"\d\d:\d\d|\d\s*s\b", out)  # no elapsed time


def test_a_terminal_without_tqdm_gets_plain_lines(data, monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    release = _run(data)
    lines = [ln for ln in terminal.getvalue().splitlines() if ln.startswith("round")]
    assert len(lines) == len(release.rounds) and "\r" not in terminal.getvalue()

"""Progress of an AIM run on stderr, with the privacy budget spent so far.

One mechanism, two looks: on a terminal with `tqdm` installed (``pip install
'dp-marginals[progress]'``) a bar filled by the share of the zCDP budget spent, its text
showing the round, ``rho spent/budget``, sigma and the model size; otherwise (tqdm absent, or
stderr redirected to a file or a pipe) one plain line per round. Nothing here is private: the
lines show what the release publishes anyway (rounds, cliques, scales, ledger). No line shows a
per-round or total time: how long a round took depends on the private rows (model size is
public, but selection and counting time are not), and a log is a file an attacker may hold.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO


def terminal_bar(stream: TextIO, total: float, bar_format: str) -> Any:
    """A tqdm bar of ``total`` on ``stream`` when it is a terminal and tqdm is installed, else None.
    ``bar_format`` must show no time or rate (see the module docstring)."""
    isatty = getattr(stream, "isatty", None)
    if not (callable(isatty) and isatty()):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, file=stream, desc="", leave=True, dynamic_ncols=True, bar_format=bar_format)


def _tqdm_bar(stream: TextIO, rho: float) -> Any:
    """A tqdm bar over the budget when ``stream`` is a terminal and tqdm is installed, else None."""
    return terminal_bar(stream, rho, "AIM {percentage:3.0f}% of budget |{bar}| {desc}")


class RunProgress:
    """Reports an AIM run: a start line, one update per round, a closing line. Disabled: silent."""

    def __init__(self, enabled: bool, rho: float, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.rho = rho
        self.stream = sys.stderr if stream is None else stream
        self.bar = _tqdm_bar(self.stream, rho) if enabled else None

    def _line(self, message: str) -> None:
        if self.bar is not None:
            self.bar.write(message, file=self.stream)
        else:
            print(message, file=self.stream, flush=True)

    def _budget(self, spent: float) -> str:
        return f"rho {spent:.4g}/{self.rho:.4g}"

    def start(self, message: str, spent: float) -> None:
        """The run's opening line (settings, the 1-way measurements' share of the budget)."""
        if self.enabled:
            self._line(f"{message} ({100 * spent / self.rho:.1f}% of budget, {self._budget(spent)})")
            self._advance(spent)

    def round(self, entry: dict) -> None:
        """One selection round (an entry of the release's round log)."""
        if not self.enabled:
            return
        spent = entry["rho_used"]
        if self.bar is not None:
            self.bar.set_description_str(
                f"round {entry['round']}, {self._budget(spent)}, sigma {entry['sigma']:.2f}, "
                f"model {entry['model_size_mb']:.2f} MB", refresh=False)
            self._advance(spent)
            return
        self._line(
            f"round {entry['round']:3d}  budget {100 * spent / self.rho:5.1f}% ({self._budget(spent)})  "
            f"{','.join(entry['clique']):<40} sigma={entry['sigma']:8.2f}  model {entry['model_size_mb']:6.2f} MB"
            + ("  (anneal)" if entry["annealed"] else "")
        )

    def _advance(self, spent: float) -> None:
        if self.bar is not None:
            self.bar.n = min(spent, self.rho)
            self.bar.refresh()

    def finish(self, rounds: int, model_mb: float) -> None:
        """The closing line; closes the bar."""
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.n = self.bar.total  # the last round spends the remainder (up to rounding)
            self.bar.close()
            self.bar = None
        self._line(f"AIM done: {rounds} rounds, model {model_mb:.2f} MB")

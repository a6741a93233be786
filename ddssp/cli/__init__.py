"""The ``dp-marginals`` command line: one module per command, shared helpers in `common`."""

from .app import main

__all__ = ["main"]

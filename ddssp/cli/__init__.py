"""The ``dp-marginals`` command line: one module per subcommand (``synth``, ``discretize``, ``fit``,
``inspect``, ``spec``, ``report``, ``predict``), shared helpers in `common`, the parser and entry
point in `app`."""

from .app import main

__all__ = ["main"]

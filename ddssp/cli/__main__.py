"""``python -m ddssp.cli``: the ``dp-marginals`` command line."""

import sys

from .app import main

sys.exit(main())

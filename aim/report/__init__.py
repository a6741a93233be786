"""The quality report of a release: HTML with plots (the ``report`` extra), `write_report`."""

from .build import write_report

__all__ = ["write_report"]

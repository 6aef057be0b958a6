"""The command line (``asys``): a client of the public API (:mod:`asysstats.api`)."""

from asysstats.cli.app import entry, main

__all__ = ["entry", "main"]

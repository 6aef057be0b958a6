"""`python -m asysstats` runs the `asys` command line."""

from asysstats.cli import entry

entry()

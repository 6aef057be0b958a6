"""`python -m asysstats` runs the `asys` command line."""

from asysstats.cli.app import entry

entry()

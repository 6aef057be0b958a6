"""One exception family; the CLI prints its message on one line and exits 2."""


class AsysError(Exception):
    """Bad input or unusable data: the message names the culprit (file, table, rule, option)."""


class MissingData(AsysError):
    """None of the tables a rule reads exist in the report."""


class OutputClosed(Exception):
    """The console's reader went away (``asys stats ... | head``): stop quietly, exit 0."""

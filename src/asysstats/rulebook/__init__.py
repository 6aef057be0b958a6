"""The rule modules, one per rule family; the registry that lists them is :mod:`asysstats.rulebook.registry`."""

"""The shared analysis of events: the inputs a rule reads, HGTX ranges, nesting, launches, correlation, names."""

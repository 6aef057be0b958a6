"""Rules over merged report sets: statistics reduced where each report lives, the Host column."""

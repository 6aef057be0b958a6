"""The public API: reports opened, rules run, results as Arrow tables."""

"""The shared numpy kernel: grouped statistics and interval algebra (no Python loops over events)."""

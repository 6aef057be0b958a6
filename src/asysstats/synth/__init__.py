"""Writing reports: the asysrep SQLite layout (for samples, benchmarks and test fixtures)."""

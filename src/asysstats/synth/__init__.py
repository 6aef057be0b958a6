"""Writing reports: the asysrep SQLite layout (for samples, benchmarks and test fixtures)."""

MAX_SCALE = 10_000  # of `asys sample`: ~35 M kernels, ~9 GB of report (docs/performance.md: 5 M kernels at 1,434)

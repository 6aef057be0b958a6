"""asysstats: the `asys stats` / `asys compare` expert-system reports over profiler reports."""

import os

# No linear algebra here: numpy's OpenBLAS need not start its thread pool at import (0.04-0.09 s
# of every run). A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Arrow's allocator (mimalloc) gives freed pages back at once rather than after a delay: a trace
# frees and allocates its pieces faster than the delay, and the pages kept raised the peak memory
# by 70-260 MB on the 1 M sample. Read when pyarrow loads, so set before any import of it.
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "0")

__version__ = "0.1.0"

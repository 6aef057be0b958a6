"""asysstats: the `asys stats` / `asys compare` expert-system reports over profiler reports."""

import os

# No linear algebra here: numpy's OpenBLAS need not start its thread pool at import (0.04-0.09 s
# of every run). A value the user set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"

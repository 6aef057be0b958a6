"""asysstats: the `asys stats` / `asys compare` expert-system reports over profiler reports."""

__version__ = "0.1.0"

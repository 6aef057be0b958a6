"""PyTorch profiler (Kineto) Chrome-trace JSON as a report."""

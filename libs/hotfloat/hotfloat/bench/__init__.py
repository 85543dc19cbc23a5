"""Kernel microbenchmarks against the stock kernels and the device's measured ceilings (`hotfloat bench`)."""

from .harness import Options
from .plot import plot
from .records import Report
from .run import run_bench

__all__ = ["Options", "Report", "plot", "run_bench"]

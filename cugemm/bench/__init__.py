"""The bench: every chosen variant timed against cupy.matmul (cuBLAS) in the same run.

    timing.py   Timer: CuPy events, warm-up, median and p20/p80, L2 flush
    measure.py  Row / Status records, shape grids, bench_shape (check, then time, one shape)
    report.py   tables, JSON/CSV with the run's metadata, plots, README's generated results
    cli.py      the command line (python -m cugemm bench, python bench.py)
"""
from .cli import main
from .measure import DTYPES, SWEEPS, Row, Status, bench_shape, parse_shapes, sweep_shapes
from .timing import Timer, percentile

__all__ = ["main", "DTYPES", "SWEEPS", "Row", "Status", "bench_shape", "parse_shapes", "sweep_shapes",
           "Timer", "percentile"]

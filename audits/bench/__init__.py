"""``gtm bench``: GTM and its peers side by side on the same workload (Table 1 of the paper).

:mod:`.run` measures (grid, settings, per-cell rows, done-when checks); :mod:`.report` renders the
Markdown report and the plots.
"""

from .report import bench_markdown, write_plots
from .run import FULL_GRID, MEDIAN_CELL, QUICK_GRID, BenchSettings, checks, run_cell, run_grid, solve_monotone

__all__ = ["FULL_GRID", "MEDIAN_CELL", "QUICK_GRID", "BenchSettings", "bench_markdown", "checks", "run_cell",
           "run_grid", "solve_monotone", "write_plots"]

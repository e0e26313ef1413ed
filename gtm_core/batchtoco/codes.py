"""BatchToCO as a finite-output mechanism, for the finite-output auditor (audits/finite.py).

``batchtoco_output_code(config, stream, seed)`` runs Algorithm 3 once on ``stream`` with a
generator seeded by ``seed`` and maps its released sequence (Y_1, ..., Y_T) to one string code:
``"sequence"`` (default; solutions joined by '|', vertices of a solution by '-', or a cut's
bitmask) or ``"final"`` (Y_T only, a coarser summary with fewer codes). A run whose GTM stopped
on its evaluation budget (a noise-only event) has the documented code ``"budget-exhausted"``.
Neighbouring inputs: ``stream`` and ``stream.neighbour(i)`` (edge i absent).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..errors import EvaluationBudgetExceeded
from ..validation import check_choice, check_nonnegative_int
from .driver import BatchToCO
from .implementation import ALGORITHM3, Algorithm3
from .params import COConfig
from .problems import make_problem
from .streams import EdgeStream

SUMMARIES = ("sequence", "final")
BUDGET_EXHAUSTED = "budget-exhausted"


def solution_code(problem, solution) -> str:
    if problem.name == "coverage":
        return "-".join(str(int(v)) for v in solution)
    return str(int(solution))


def batchtoco_output_code(config: COConfig, stream: EdgeStream, seed: int, *,
                          implementation: Algorithm3 = ALGORITHM3, summary: str = "sequence") -> str:
    """One run of BatchToCO on ``stream`` -> its finite output code (see the module docstring)."""
    check_choice("summary", summary, SUMMARIES)
    problem = make_problem(config.problem, len(stream.vertices), config.k)
    algo = BatchToCO(config, problem, np.random.default_rng(seed), implementation=implementation)
    codes = []
    try:
        for e in stream.edges:
            codes.append(solution_code(problem, algo.step(e).solution))
    except EvaluationBudgetExceeded:
        return BUDGET_EXHAUSTED
    return "|".join(codes) if summary == "sequence" else codes[-1]


def batchtoco_counts(config: COConfig, stream: EdgeStream, n: int, seed: int, *,
                     implementation: Algorithm3 = ALGORITHM3, summary: str = "sequence") -> Counter:
    """Counts of the codes of ``n`` independent runs (run i seeded with (seed, i))."""
    n = check_nonnegative_int("n", n)
    return Counter(batchtoco_output_code(config, stream, [seed, i], implementation=implementation, summary=summary)
                   for i in range(n))

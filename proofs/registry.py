"""The registry of lemma checks and the runner behind ``gtm prove``."""

from __future__ import annotations

import importlib
import os
import platform
import time
from dataclasses import dataclass, field
from typing import Callable

import flint

from gtm_core.errors import InvalidParameter
from gtm_core.validation import check_positive

from . import solvers
from .core import LemmaCheck, LemmaResult, run_lemma

#: one module per paper statement, in paper order
MODULES = [
    "lemma10",
    "lemma11",
    "lemma12",
    "lemma15",
    "lemma17",
    "lemma19",
    "lemma20",
    "theorem21",
    "lemma22",
    "theorem23",
    "lemma24",
    "lemma27",
    "lemma28",
    "corollary30",
    "lemma33",
    "lemma38",
    "co_certified",
    "lemma54",
    "lemma55",
    # the black-box evaluator paper (docs/blackbox.md)
    "bb_theorem27",
    "bb_tlap",
    "bb_expmech",
    "bb_approx",
]


def all_lemmas() -> list[LemmaCheck]:
    out: list[LemmaCheck] = []
    for name in MODULES:
        out.extend(importlib.import_module(f"proofs.{name}").LEMMAS)
    return out


def select(names: list[str] | tuple[str, ...] | None) -> list[LemmaCheck]:
    """The named checks (exact key, or a prefix such as ``lemma10`` for ``lemma10.3a`` ...); all if none."""
    lemmas = all_lemmas()
    if not names:
        return lemmas
    chosen: list[LemmaCheck] = []
    for raw in names:
        name = raw.strip().lower()
        hits = [lm for lm in lemmas if lm.key == name or lm.key.startswith(name + ".")]
        if not hits:
            raise InvalidParameter(
                f"unknown lemma {raw!r} (known: {', '.join(sorted({lm.key.split('.')[0] for lm in lemmas}))})"
            )
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def versions() -> dict:
    return {
        "z3": solvers.z3_version(),
        "cvc5": solvers.cvc5_version(),
        "python-flint": getattr(flint, "__version__", "unknown"),
    }


def limits() -> dict:
    return {
        "z3_rlimit": solvers.Z3_RLIMIT,
        "z3_timeout_ms": solvers.Z3_TIMEOUT_MS,
        "cvc5_rlimit_per": solvers.CVC5_RLIMIT,
        "cvc5_tlimit_per_ms": solvers.CVC5_TIMEOUT_MS,
        "model_recheck": "exact rationals, or mpmath at 60 digits (relative slack 1e-45)",
    }


@dataclass
class ProveReport:
    results: list[LemmaResult]
    seconds: float
    versions: dict = field(default_factory=versions)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "versions": self.versions,
            "limits": limits(),
            "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
            "summary": {
                "lemmas": len(self.results),
                "proved": sum(r.status == "proved" for r in self.results),
                "certified": sum(r.status == "certified" for r in self.results),
                "failed": sum(r.status == "failed" for r in self.results),
                "not_run": sum(r.status == "not-run" for r in self.results),
                "mutants": sum(len(r.mutants) for r in self.results),
                "mutants_killed": sum(r.mutants_killed for r in self.results),
                "errata": sorted({e.name.split(":")[0] for r in self.results for e in r.errata}),
            },
            "lemmas": [r.to_dict() for r in self.results],
        }


def run(
    lemmas: list[LemmaCheck], progress: Callable[[str], None] | None = None, seconds: float | None = None
) -> ProveReport:
    """Run the checks in order; with a time budget, checks not started in time are reported ``not-run``."""
    if seconds is not None:
        seconds = check_positive("seconds", seconds)
    t0 = time.perf_counter()
    results = []
    for i, lm in enumerate(lemmas, 1):
        if seconds is not None and time.perf_counter() - t0 > seconds:
            results.append(LemmaResult(lm.key, lm.ref, "not-run", "time budget exhausted", [], None, [], [], 0.0))
            continue
        if progress:
            progress(f"[{i}/{len(lemmas)}] {lm.key} ...")
        r = run_lemma(lm)
        if progress:
            progress(
                f"[{i}/{len(lemmas)}] {lm.key}: {r.status}, mutants {r.mutants_killed}/{len(r.mutants)} killed"
                f" ({r.seconds:.2f} s)"
            )
        results.append(r)
    return ProveReport(results, time.perf_counter() - t0)

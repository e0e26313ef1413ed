"""Targets of the finite-output auditor (:mod:`audits.finite`): the protocol and its clients.

A target answers ``sample(input, n, seed)`` with a :class:`~collections.Counter` of output codes:
:class:`CallableFiniteTarget` wraps a Python callable, :class:`SubprocessFiniteTarget` speaks the
JSON-lines protocol of docs/finite_outputs.md to a program. :func:`validate_response` checks one
answer of the protocol; :func:`canonical` is the JSON text under which an input's samples are pooled.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable

import numpy as np

from gtm_core.errors import GTMError, InvalidParameter, TargetError
from gtm_core.validation import check_nonnegative_int, is_integer

from .targets import JsonLinesSubprocess

__all__ = ["FiniteTarget", "CallableFiniteTarget", "SubprocessFiniteTarget", "validate_response", "canonical",
           "output_code", "check_request"]


def canonical(value: Any) -> str:
    """The canonical JSON text of an input (the key under which its samples are pooled)."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidParameter(f"input must be a finite JSON value, got {type(value).__name__}: {exc}") from None


def output_code(x, source: str) -> str:
    """An output code as the protocol's string (an integer as its decimal string); else TargetError."""
    if isinstance(x, str):
        return x
    if not is_integer(x):
        raise TargetError(f"{source} answered an output code that is not a string or integer: {x!r:.60}")
    return str(int(x))


def validate_response(resp: Any, n: int, *, source: str = "target") -> Counter:
    """Check one answer of the finite protocol; returns the counts of the codes (summing to n)."""
    if not isinstance(resp, dict):
        raise TargetError(f"{source} answered a JSON {type(resp).__name__}, expected an object")
    if "error" in resp and "counts" not in resp and "outputs" not in resp:
        raise TargetError(f"{source} reported an error: {str(resp['error'])[:200]}")
    if "counts" in resp:
        counts = resp["counts"]
        if not isinstance(counts, dict):
            raise TargetError(f"{source} answered 'counts' that is not an object")
        out: Counter = Counter()
        for k, v in counts.items():
            if not (is_integer(v) and v >= 0):
                raise TargetError(f"{source} answered count {v!r} for code {k!r}; counts must be integers >= 0")
            out[output_code(k, source)] += int(v)
    elif "outputs" in resp:
        outputs = resp["outputs"]
        if not isinstance(outputs, list):
            raise TargetError(f"{source} answered 'outputs' that is not a list")
        out = Counter(output_code(x, source) for x in outputs)
    else:
        raise TargetError(f"{source} answer has neither 'counts' nor 'outputs'")
    total = sum(out.values())
    if total != n:
        raise TargetError(f"{source} answered {total} outputs, expected {n}")
    return out


def check_request(n, seed):
    """A sample request's n and seed are integers >= 0 (else InvalidParameter)."""
    check_nonnegative_int("n", n)
    check_nonnegative_int("seed", seed)


class FiniteTarget:
    """Interface: ``sample(input, n, seed) -> Counter`` of output codes; ``close()``; a context manager."""

    name = "finite-target"

    def sample(self, inp: Any, n: int, seed: int) -> Counter:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def set_deadline(self, deadline: float | None) -> None:
        """Bound every later wait for an answer by ``deadline`` (``time.monotonic()`` seconds); in-process
        targets ignore it."""

    def describe(self) -> str:
        return self.name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class CallableFiniteTarget(FiniteTarget):
    """Any Python callable ``fn(input, n, seed)`` returning a list of codes or a ``{code: count}`` mapping."""

    def __init__(self, fn: Callable, *, name: str = "callable"):
        if not callable(fn):
            raise InvalidParameter(f"fn must be callable, got {type(fn).__name__}")
        self.fn, self.name = fn, name

    def sample(self, inp, n, seed):
        check_request(n, seed)
        try:
            out = self.fn(inp, int(n), int(seed))
        except GTMError:
            raise
        except Exception as exc:  # broad-except: the caller's function may fail in any way; a typed TargetError
            raise TargetError(f"{self.name} raised {type(exc).__name__}: {str(exc)[:200]}") from None
        if isinstance(out, dict):
            resp = {"counts": out}
        else:
            resp = {"outputs": list(out) if not isinstance(out, np.ndarray) else out.tolist()}
        return validate_response(resp, int(n), source=self.name)


class SubprocessFiniteTarget(JsonLinesSubprocess, FiniteTarget):
    """A program speaking the finite JSON-lines protocol, started once in its own process group.

    The process handling is :class:`audits.targets.JsonLinesSubprocess` (the one client shared with
    :class:`audits.targets.SubprocessTarget`, on :class:`gtm_core.processes.ProcessGroup`): every wait
    is bounded (``timeout`` per answer, ``startup_timeout`` for the first, and the audit's deadline);
    a crash, a hang, malformed JSON or a wrong count raises :class:`TargetError`; ``close()`` ends the
    whole process tree, so helpers the target spawned do not outlive the audit.
    """

    def sample(self, inp, n, seed):
        check_request(n, seed)
        canonical(inp)  # a finite JSON value, else InvalidParameter before anything is sent
        total: Counter = Counter()
        done, part = 0, 0
        while done < n or (n == 0 and part == 0):
            m = min(self.max_batch, n - done)
            batch_seed = int(seed) if part == 0 else int(np.random.SeedSequence([int(seed), part]).generate_state(1)[0])
            resp = self.request({"input": inp, "n": int(m), "seed": batch_seed})
            total.update(validate_response(resp, m, source="target"))
            done += m
            part += 1
            if n == 0:
                break
        return total

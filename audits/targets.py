"""Deployment targets: anything that can run a GTM on a Bernoulli stream many times.

A :class:`Target` answers ``sample(p, n, seed) -> TargetSample`` with ``halt`` (int array of
length n; 0 = never halted, 1..T = halting step) and optionally ``evaluations``.

* :class:`SimulatorTarget` - our GTM (or a broken :class:`~audits.power.broken.Implementation`) in-process,
  vectorised (the fast path).
* :class:`ReferenceTarget` - the literal Algorithm 1 of :mod:`gtm_core.reference` (slow).
* :class:`CallableTarget` - any Python callable ``fn(p, n, seed)``.
* :class:`SubprocessTarget` - any program speaking the JSON-lines protocol of ``docs/protocol.md``:
  request ``{"p": [...], "n": N, "seed": S}``, response ``{"halt": [...]}`` (+ ``"evaluations"``).
  Runs are batched (one request carries up to ``max_batch`` runs); a crash, a timeout, malformed
  JSON, wrong lengths or out-of-range values raise :class:`TargetError` (never a bogus verdict).
  Its process handling, :class:`JsonLinesSubprocess`, is the one client of every JSON-lines
  protocol (also :class:`audits.finite.SubprocessFiniteTarget`).

Every answer goes through :func:`validate_sample`.
"""

from __future__ import annotations

import atexit
import json
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from gtm_core.errors import BudgetStop, GTMError, InvalidParameter, TargetError
from gtm_core.inputs import parse_json
from gtm_core.processes import ProcessClosed, ProcessGroup, ProcessTimeout, resolve_command
from gtm_core.planners import Plan
from gtm_core.validation import check_nonnegative_int, check_seconds, check_stream

from .execution import batch_seed
from .power.broken import CORRECT, Implementation, simulate_deployment


@dataclass(frozen=True)
class TargetSample:
    """One answer of a target.

    Attributes:
        halt: int64 array, one outcome per run: 0 = never halted, t in 1..T = halted at step t
            (the codes of ``docs/protocol.md``).
        evaluations: int64 array of total mechanism evaluations per run, or None when not asked.
    """

    halt: np.ndarray
    evaluations: np.ndarray | None = None


def validate_sample(halt, evaluations, n: int, T: int, *, source: str = "target") -> TargetSample:
    """Check an answer: n outcome codes in -T..T (0 never halted, t halted at t, -t stopped at t on the
    evaluation budget, ``docs/protocol.md``) and n non-negative evaluation counts if present."""
    try:
        h = np.asarray(halt)
    except Exception:
        raise TargetError(f"{source} answered halting times that are not an array") from None
    if h.ndim != 1 or h.size != n:
        raise TargetError(f"{source} answered {h.size if h.ndim == 1 else 'a non-list of'} halting times, expected {n}")
    if h.size and not (np.issubdtype(h.dtype, np.integer) or (
            np.issubdtype(h.dtype, np.floating) and np.all(np.isfinite(h)) and np.all(h == np.floor(h)))):
        raise TargetError(f"{source} answered halting times that are not integers")
    h = h.astype(np.int64)
    if h.size and (h.min() < -T or h.max() > T):
        bad = int(h[(h < -T) | (h > T)][0])
        raise TargetError(f"{source} answered outcome code {bad} outside -{T}..{T}")
    ev = None
    if evaluations is not None:
        e = np.asarray(evaluations)
        if e.ndim != 1 or e.size != n:
            raise TargetError(f"{source} answered {e.size} evaluation counts, expected {n}")
        if e.size and (not np.issubdtype(e.dtype, np.integer) or e.min() < 0):
            raise TargetError(f"{source} answered evaluation counts that are not non-negative integers")
        ev = e.astype(np.int64)
    return TargetSample(h, ev)


def _check_request(p, n, seed):
    arr = check_stream("p", p)
    check_nonnegative_int("n", n)
    check_nonnegative_int("seed", seed)
    return arr


class Target:
    """Interface: ``sample(p, n, seed) -> TargetSample``; ``close()``; usable as a context manager.

    ``sample(p, n, seed, evaluations=False)`` runs the deployment's GTM ``n`` times, independently,
    on the Bernoulli stream ``p`` (mechanism M_t answers +1 with probability ``p[t-1]``), seeding
    its randomness from ``seed``, and returns a :class:`TargetSample`. ``max_T`` is the longest
    stream the target accepts (None = unknown).
    """

    name = "target"
    max_T: int | None = None  # longest stream the target accepts (None = unknown)

    def sample(self, p, n: int, seed: int, *, evaluations: bool = False) -> TargetSample:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def set_deadline(self, deadline: float | None) -> None:
        """Bound every later wait for an answer by ``deadline`` (``time.monotonic()`` seconds).

        In-process targets answer synchronously and ignore it; :class:`SubprocessTarget` honours it.
        """

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def describe(self) -> str:
        return self.name


class SimulatorTarget(Target):
    """Our GTM for ``plan`` (or a broken deployment of it), vectorised in-process.

    The fast path (millions of runs per second): :mod:`gtm_core.simulator`'s model of Algorithm 1,
    which enforces no evaluation budget. ``deployment`` selects one of the deliberately broken
    variants of :mod:`audits.broken` (the auditor's power suite); the default is the correct GTM.

    Example:
        >>> from gtm_core import GTMConfig, make_plan
        >>> target = SimulatorTarget(make_plan(GTMConfig.load("examples/default.toml")))
        >>> target.sample([0.9, 0.9], n=5, seed=1).halt.tolist()
        [1, 1, 1, 1, 1]
    """

    def __init__(self, plan: Plan, deployment: Implementation = CORRECT, *, name: str | None = None):
        self.plan, self.deployment = plan, deployment
        self.max_T = plan.horizon
        self.name = name or ("simulator" if deployment.is_algorithm1 else "simulator(broken)")

    def sample(self, p, n, seed, *, evaluations=False):
        arr = _check_request(p, n, seed)
        res = simulate_deployment(self.plan, self.deployment, arr, int(n), np.random.default_rng(seed),
                                  evaluations=evaluations)
        return validate_sample(res.halt, res.evaluations, int(n), arr.size, source=self.name)


class ReferenceTarget(Target):
    """The literal Algorithm 1 of :mod:`gtm_core.reference` (one run at a time; slow, for cross-checks).

    Unlike the simulator it enforces every step's evaluation budget: a run that stops on its
    budget at step t answers the outcome code ``-t`` of ``docs/protocol.md``, which the auditor
    compares between neighbouring streams like any other outcome.
    """

    name = "reference"

    def __init__(self, plan: Plan):
        self.plan = plan
        self.max_T = plan.horizon

    def sample(self, p, n, seed, *, evaluations=False):
        from gtm_core.reference import run_reference

        arr = _check_request(p, n, seed)
        rng = np.random.default_rng(seed)
        out = [run_reference(self.plan, arr, rng) for _ in range(int(n))]
        halt = np.array([o[0] for o in out], dtype=np.int64)
        ev = np.array([o[1] for o in out], dtype=np.int64) if evaluations else None
        return validate_sample(halt, ev, int(n), arr.size, source=self.name)


class CallableTarget(Target):
    """Any callable ``fn(p, n, seed)`` returning halting times (or (halt, evaluations)).

    ``fn`` receives the stream as a list of floats, the number of runs and a seed, and returns
    ``n`` outcome codes (0 = never halted, t = halted at step t, -t = stopped at step t on its
    evaluation budget, ``docs/protocol.md``), optionally paired with ``n``
    evaluation counts. An exception from ``fn`` becomes a :class:`~gtm_core.errors.TargetError`
    (a :class:`~gtm_core.errors.GTMError` passes through unchanged). ``max_T``: the longest
    stream ``fn`` accepts.

    Example:
        >>> target = CallableTarget(lambda p, n, seed: [0] * n, name="never-halts")
        >>> target.sample([0.5, 0.5], n=3, seed=0).halt.tolist()
        [0, 0, 0]
    """

    def __init__(self, fn: Callable, *, name: str = "callable", max_T: int | None = None):
        if not callable(fn):
            raise InvalidParameter(f"fn must be callable, got {type(fn).__name__}")
        self.fn, self.name, self.max_T = fn, name, max_T

    def sample(self, p, n, seed, *, evaluations=False):
        arr = _check_request(p, n, seed)
        try:
            out = self.fn(list(map(float, arr)), int(n), int(seed))
        except GTMError:
            raise
        except Exception as exc:
            raise TargetError(f"{self.name} raised {type(exc).__name__}: {str(exc)[:200]}") from None
        if isinstance(out, tuple) and len(out) == 2:
            halt, ev = out
        else:
            halt, ev = out, None
        return validate_sample(halt, ev if evaluations else None, int(n), arr.size, source=self.name)


class JsonLinesSubprocess:
    """A program answering one JSON object per request line, started once in its own process group.

    The one client of the JSON-lines protocols (GTM halting times here, finite outputs in
    :mod:`audits.finite`): the process is a :class:`gtm_core.processes.ProcessGroup`, so closing,
    a timeout, an error, Ctrl-C or the death of ``gtm`` ends its whole process tree, and its stderr
    is drained (the last line is quoted in error messages). Every wait is bounded: by ``timeout``
    per answer (``startup_timeout`` for the first) and, once :meth:`set_deadline` was called (the
    auditor does with its ``seconds`` budget), by that absolute deadline. Answers are parsed by
    :func:`gtm_core.inputs.parse_json`; every failure is a :class:`TargetError`.
    """

    def __init__(self, command: str | list[str], *, timeout: float = 60.0, max_batch: int = 1_000_000,
                 startup_timeout: float | None = None, env: dict | None = None):
        self.timeout = check_seconds("timeout", timeout)
        self.startup_timeout = check_seconds(
            "startup_timeout", startup_timeout if startup_timeout is not None else timeout)
        try:
            self.command_spec = resolve_command(command, field="target command")
        except InvalidParameter as exc:
            raise TargetError(f"cannot start target: {exc}") from None
        self.command = self.command_spec.text
        self.name = f"subprocess({self.command})"
        self.max_batch = int(max_batch)
        self.requests = 0
        self.deadline: float | None = None
        self._first = True
        try:
            self._group: ProcessGroup | None = ProcessGroup(self.command_spec, env=env)
        except ProcessClosed as exc:
            raise TargetError(str(exc)) from None

    def describe(self) -> str:
        return self.command

    def process_group_id(self) -> int | None:
        """The id of the target's process group (None once closed): for process accounting."""
        return None if self._group is None else self._group.pgid

    def set_deadline(self, deadline: float | None) -> None:
        """Bound every later wait by ``deadline`` (``time.monotonic()`` seconds; None: no bound)."""
        self.deadline = deadline

    def fail(self, message: str) -> TargetError:
        """Kill the target's process tree and build the error (with its last stderr line)."""
        group = self._group
        tail = ""
        if group is not None:
            code = group.exit_code()
            group.kill()
            tail = group.stderr_tail()
            if code is not None and "exit" not in message:
                message += f" (exit code {code})"
        self._group = None
        return TargetError(message + (f": {tail}" if tail else ""))

    def request(self, payload: dict) -> dict:
        """Send one request line and return the answer, a JSON object."""
        group = self._group
        if group is None:
            raise TargetError("target connection is closed")
        if group.exit_code() is not None:
            raise self.fail("target exited")
        timeout = self.startup_timeout if self._first else self.timeout
        now = time.monotonic()
        deadline = now + timeout
        budget_bound = self.deadline is not None and self.deadline < deadline
        if budget_bound:
            deadline = self.deadline
        try:
            group.write((json.dumps(payload) + "\n").encode(), deadline)
            self.requests += 1
            raw = group.read_line(deadline)
        except ProcessTimeout:
            if budget_bound:
                self.fail("")  # kills the target's processes; the stop is the audit's, not the target's
                raise BudgetStop("the audit's time budget ran out while the target was answering") from None
            raise self.fail(f"target did not answer within {timeout:g} s (hang?)") from None
        except ProcessClosed:
            group.wait(time.monotonic() + 1)
            code = group.exit_code()
            what = "target closed its output before answering" if code is None else \
                f"target exited with code {code} before answering"
            raise self.fail(what) from None
        self._first = False
        try:
            resp = parse_json(raw, what="target answer", error=TargetError)
        except TargetError as exc:
            if "nests deeper" in str(exc):
                raise
            snippet = raw[:80].decode("utf-8", "replace")
            raise TargetError(f"target answered malformed JSON: {snippet!r}") from None
        if not isinstance(resp, dict):
            raise TargetError(f"target answered a JSON {type(resp).__name__}, expected an object")
        return resp

    def close(self) -> None:
        """End the target: close its input, give it a moment to exit, then end its process tree."""
        group = getattr(self, "_group", None)
        if group is None:
            return
        group.close_input()
        group.wait(time.monotonic() + 1.0)
        group.kill()
        self._group = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # broad-except: a destructor must not raise
            pass


class SubprocessTarget(JsonLinesSubprocess, Target):
    """A deployment behind the JSON-lines protocol (docs/protocol.md), started once and kept running;
    the process handling is :class:`JsonLinesSubprocess`."""

    def sample(self, p, n, seed, *, evaluations=False):
        arr = _check_request(p, n, seed)
        halts, evs = [], []
        done, part = 0, 0
        while done < n or (n == 0 and part == 0):
            m = min(self.max_batch, n - done)
            # each batch gets its own seed, derived deterministically from (seed, batch index)
            req = {"p": [float(x) for x in arr], "n": int(m), "seed": batch_seed(seed, part)}
            if evaluations:
                req["evaluations"] = True
            resp = self.request(req)
            if "error" in resp and "halt" not in resp:
                raise TargetError(f"target reported an error: {str(resp['error'])[:200]}")
            if "halt" not in resp:
                raise TargetError("target answer has no 'halt' field")
            s = validate_sample(resp.get("halt"), resp.get("evaluations") if evaluations else None, m, arr.size,
                                source="target")
            if evaluations and s.evaluations is None:
                raise TargetError("target did not answer evaluation counts")
            halts.append(s.halt)
            if evaluations:
                evs.append(s.evaluations)
            done += m
            part += 1
            if n == 0:
                break
        halt = np.concatenate(halts) if halts else np.zeros(0, dtype=np.int64)
        return TargetSample(halt, np.concatenate(evs) if evaluations else None)

    def __reduce__(self):
        # shipped to a Dask worker as its command line, timeouts and the audit's deadline only (no process,
        # no environment): the worker starts it once and reuses it (:func:`worker_subprocess_target`). The
        # deadline travels as wall-clock time (time.time()): monotonic clocks differ between machines
        wall = None if self.deadline is None else time.time() + (self.deadline - time.monotonic())
        return (worker_subprocess_target,
                (self.command_spec.text, self.timeout, self.max_batch, self.startup_timeout, wall))


WORKER_TARGETS: dict[tuple, SubprocessTarget] = {}  # this process's subprocess targets, by command and timeouts


def worker_subprocess_target(command: str, timeout: float, max_batch: int, startup_timeout: float,
                             deadline_wall: float | None = None) -> SubprocessTarget:
    """The subprocess target for ``command`` in this (worker) process: started on first use, then reused
    for every batch; one that failed is replaced. Closed by :func:`close_worker_targets`. ``deadline_wall``
    (``time.time()`` seconds, None: none) is the audit's time budget: no answer is awaited past it."""
    key = (command, float(timeout), int(max_batch), float(startup_timeout))
    t = WORKER_TARGETS.get(key)
    if t is None or t.process_group_id() is None:
        if not WORKER_TARGETS:
            atexit.register(close_worker_targets)  # a worker that exits ends its targets (its supervisor would too)
        t = SubprocessTarget(command, timeout=timeout, max_batch=max_batch, startup_timeout=startup_timeout)
        WORKER_TARGETS[key] = t
    t.set_deadline(None if deadline_wall is None else time.monotonic() + (deadline_wall - time.time()))
    return t


def close_worker_targets() -> int:
    """Close every subprocess target this process started for workers; returns how many."""
    n = 0
    while WORKER_TARGETS:
        _, t = WORKER_TARGETS.popitem()
        t.close()
        n += 1
    return n


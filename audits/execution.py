"""Where an audit's samples are computed: in this process (the default, fastest on one machine) or on a
Dask cluster (``dask.distributed``: a running scheduler, or a local cluster of N worker processes).

Reproducibility does not depend on placement. Every sample request ``(input, n, seed)`` is cut into
fixed-size batches of :data:`BATCH_RUNS` runs (independent of the number of workers); batch ``i``'s
random stream derives only from ``(seed, i)`` (:func:`batch_seed`, numpy ``SeedSequence``), and the
batches' histograms are reduced in batch order. So a seeded ``--max-samples`` audit gives the same
counts, bound, witness and verdict in-process, on 1, 2 or 64 workers, and when a worker dies and
its batches are recomputed elsewhere. (Batch 0 uses the request seed itself - the rule the JSON-lines
protocol's ``max_batch`` splitting already used - so a request of at most one batch is unchanged.)

What is sent to a worker: the audit problem (the candidate's inputs, the plan or deployment being
audited, for a subprocess target only its command line and timeouts - never an environment or a
secret), a batch's input, size and seed; what comes back: histograms of the batch's outputs.

Errors: a target failing on a worker raises :class:`~gtm_core.errors.TargetError` naming the worker;
a scheduler that cannot be reached (within :data:`CONNECT_SECONDS`, a deadline of our own: also a
server that accepts and never answers) or is lost raises :class:`~gtm_core.errors.ClusterError`.
Either way the audit stops: never a partial verdict.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from gtm_core.errors import BudgetStop, ClusterError, GTMError, InvalidParameter, TargetError
from gtm_core.validation import check_int

from .events import codes_histogram

BATCH_RUNS = 1_000_000  # runs per batch: even (odd-numbered runs keep their parity), placement-independent
CONNECT_SECONDS = 10.0  # bound on reaching a scheduler / starting a local cluster's workers
SHUTDOWN_SECONDS = 10.0  # bound on closing a client and a local cluster
LOCAL_RUNS = 200_000  # a group of requests with fewer runs is computed in the client: a round trip costs more


def batch_seed(seed: int, index: int) -> int:
    """Seed of batch ``index`` of a request seeded ``seed``: the request seed for batch 0, else the
    first word of ``SeedSequence([seed, index])`` (a function of (seed, index) only)."""
    if index == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def batch_sizes(n: int) -> list[int]:
    """Sizes of the batches of an n-run request: full batches of :data:`BATCH_RUNS`, then the rest."""
    n = int(n)
    full, rest = divmod(n, BATCH_RUNS)
    return [BATCH_RUNS] * full + ([rest] if rest or n == 0 else [])


@dataclass(frozen=True)
class Request:
    """n runs of input ``inp`` seeded ``seed``; ``half``: also the histogram of the odd-numbered runs."""

    inp: Any
    n: int
    seed: int
    half: bool = False


@dataclass(frozen=True)
class BatchResult:
    hist: np.ndarray
    half: np.ndarray | None
    runs: int
    seconds: float
    worker: str
    cpu_seconds: float = 0.0  # CPU time of the process that ran it (its other threads included)


def sample_batch(problem, inp, n: int, seed: int, n_codes: int, half: bool, worker: str = "in-process") -> BatchResult:
    """One batch: ``problem.sample_codes(inp, n, seed)`` reduced to histograms (the unit of work)."""
    t0, c0 = time.monotonic(), time.process_time()
    codes = problem.sample_codes(inp, int(n), int(seed))
    h = codes_histogram(codes, n_codes)
    h1 = codes_histogram(codes[1::2], n_codes) if half else None
    return BatchResult(h, h1, int(n), time.monotonic() - t0, worker, time.process_time() - c0)


def worker_sample_batch(problem, inp, n: int, seed: int, n_codes: int, half: bool) -> BatchResult:
    """:func:`sample_batch` on a Dask worker: any failure becomes a one-line TargetError naming the worker."""
    from distributed import get_worker

    try:
        name = get_worker().address
    except ValueError:
        name = f"pid {os.getpid()}"
    try:
        return sample_batch(problem, inp, n, seed, n_codes, half, worker=name)
    except BudgetStop:
        raise  # the audit's own deadline, not a failure of the target
    except GTMError as exc:
        raise TargetError(f"on worker {name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    except Exception as exc:  # broad-except: a worker-side failure must fail the audit, never be partial
        raise TargetError(f"on worker {name}: {type(exc).__name__}: {str(exc)[:200]}") from None


@dataclass
class ExecutionStats:
    """What ran where: batches, runs and compute seconds per worker, and wall time inside the executor."""

    batches: int = 0
    runs: int = 0
    wall_seconds: float = 0.0
    per_worker: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, r: BatchResult) -> None:
        self.batches += 1
        self.runs += r.runs
        w = self.per_worker.setdefault(r.worker, {"batches": 0, "runs": 0, "seconds": 0.0, "cpu_seconds": 0.0})
        w["batches"] += 1
        w["runs"] += r.runs
        w["seconds"] += r.seconds
        w["cpu_seconds"] += r.cpu_seconds


class Executor:
    """Interface: ``histograms(problem, requests, n_codes)`` -> one ``(hist, half_hist)`` per request."""

    kind = "in-process"
    workers = 1

    def __init__(self):
        self.stats = ExecutionStats()

    def histograms(self, problem, requests: Sequence[Request], n_codes: int,
                   on_batch=None) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """One ``(hist, half_hist)`` per request; ``on_batch(runs)`` (optional) is called as each batch
        finishes, in completion order (progress only: the histograms are reduced in batch order)."""
        t0 = time.monotonic()
        jobs = [(k, batch_seed(r.seed, i), m) for k, r in enumerate(requests) for i, m in enumerate(batch_sizes(r.n))]
        results = self._run(problem, requests, jobs, n_codes, on_batch or (lambda runs: None))
        self.stats.wall_seconds += time.monotonic() - t0
        out: list[list] = [[np.zeros(n_codes, dtype=np.int64), np.zeros(n_codes, dtype=np.int64) if r.half else None]
                           for r in requests]
        for (k, _, _), res in zip(jobs, results):  # reduced in batch order
            self.stats.add(res)
            out[k][0] = out[k][0] + res.hist
            if requests[k].half:
                out[k][1] = out[k][1] + res.half
        return [(h, h1) for h, h1 in out]

    def _run(self, problem, requests, jobs, n_codes, on_batch) -> list[BatchResult]:
        out = []
        for k, s, m in jobs:
            out.append(sample_batch(problem, requests[k].inp, m, s, n_codes, requests[k].half))
            on_batch(m)
        return out

    def map_ordered(self, fn, items: Sequence, *, deadline: float | None = None) -> list:
        """``[fn(x) for x in items]`` in order; with ``deadline`` (``time.monotonic()``) no new item starts
        after it and the list stops there. A whole unit of work per item (e.g. a bench cell)."""
        out = []
        for x in items:
            if deadline is not None and time.monotonic() > deadline:
                break
            out.append(fn(x))
        return out

    def info(self, *, reproducible: bool) -> dict:
        """The JSON's execution section (everything placement- or time-dependent lives here)."""
        st = self.stats
        per_worker = {w: {"batches": int(v["batches"]), "runs": int(v["runs"]),
                          "runs_per_second": (v["runs"] / v["seconds"]) if v["seconds"] > 0 else None,
                          "runs_per_cpu_second": (v["runs"] / v["cpu_seconds"]) if v["cpu_seconds"] > 0 else None}
                      for w, v in sorted(st.per_worker.items())}
        return {"kind": self.kind, "workers": self.workers, "batch_runs": BATCH_RUNS, "batches": st.batches,
                "runs": st.runs, "seconds": st.wall_seconds,
                "runs_per_second": (st.runs / st.wall_seconds) if st.wall_seconds > 0 else None,
                "per_worker": per_worker, "reproducible": bool(reproducible)}

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


InProcess = Executor


def call_within(fn, seconds: float, *, on_late=None):
    """``fn()`` bounded by ``seconds`` of wall time, whatever ``fn`` does: its result or its exception,
    else :class:`TimeoutError`. ``fn`` runs in a daemon thread that is abandoned at the deadline (it
    cannot be interrupted); a result it returns after that is handed to ``on_late`` (e.g. to close it)."""
    state: dict = {}
    lock = threading.Lock()
    done = threading.Event()

    def target():
        try:
            result, error = fn(), None
        except BaseException as exc:  # broad-except: handed to the caller, or dropped if it gave up
            result, error = None, exc
        with lock:
            late = state.get("abandoned", False)
            state.update(result=result, error=error)
            done.set()
        if late and error is None and on_late is not None:
            on_late(result)

    threading.Thread(target=target, name="gtm-deadline", daemon=True).start()
    try:
        finished = done.wait(seconds)
    finally:
        with lock:
            if not done.is_set():
                state["abandoned"] = True
    if not finished and not done.is_set():
        raise TimeoutError(f"no answer within {seconds:g} s")
    if state["error"] is not None:
        raise state["error"]
    return state["result"]


def probe_scheduler(address: str, seconds: float, *, stated: float | None = None) -> None:
    """Raise :class:`ClusterError` unless whatever listens at a ``tcp://`` address (or a bare
    ``host:port``) starts talking within ``seconds``: a Dask scheduler writes its handshake as soon as it
    accepts a connection. Other schemes (``tls://``, ``inproc://`` ...) are left to Dask. ``stated``: the
    deadline the error message names (the whole connection's, of which ``seconds`` may be the rest)."""
    scheme, sep, rest = str(address).partition("://")
    if not sep:
        scheme, rest = "tcp", str(address)
    if scheme != "tcp":
        return
    host, _, port = rest.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        return  # Dask reports a malformed address itself
    deadline = time.monotonic() + seconds
    where = f"cannot reach scheduler {address} within {seconds if stated is None else stated:g} s"
    try:
        with socket.create_connection((host, int(port)), timeout=seconds) as sock:
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            first = sock.recv(1)
    except (socket.timeout, TimeoutError):
        raise ClusterError(f"{where}: it accepted the connection but sent nothing (not a Dask scheduler?)") from None
    except OSError as exc:
        raise ClusterError(f"{where}: {type(exc).__name__}: {exc.strerror or exc}") from None
    if not first:
        raise ClusterError(f"{where}: it closed the connection without a Dask handshake")


def close_quietly(client) -> None:
    """Close a Dask client nobody uses any more (bounded, errors ignored)."""
    try:
        client.close(timeout=SHUTDOWN_SECONDS)
    except Exception:  # broad-except: best effort on an abandoned connection
        pass


class DaskExecutor(Executor):
    """Batches on a Dask cluster: ``scheduler`` (an address) or a local cluster of ``workers`` processes
    (one thread each) started here and shut down by :meth:`close` (bounded by :data:`SHUTDOWN_SECONDS`)."""

    kind = "dask"

    def __init__(self, *, workers: int | None = None, scheduler: str | None = None,
                 connect_seconds: float = CONNECT_SECONDS, local_runs: int = LOCAL_RUNS):
        super().__init__()
        self.local_runs = int(local_runs)
        if (workers is None) == (scheduler is None):
            raise InvalidParameter("give exactly one of workers (a local cluster) or scheduler (an address)")
        if workers is not None:
            check_int("workers", workers, minimum=1, maximum=1024)
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ClusterError("Dask is not installed: pip install 'gtm[dask]'") from None
        import dask

        deadline = time.monotonic() + connect_seconds  # for reaching a scheduler
        self.cluster = None
        self.client = None
        self.scheduler = scheduler
        # the workers' statistical profiler samples the task thread's stack every 10 ms (GIL contention):
        # off - batches are long, numeric and the same every time
        dask.config.set({"distributed.comm.timeouts.connect": f"{connect_seconds}s",
                         "distributed.worker.profile.enabled": False,
                         # Dask's MALLOC_TRIM_THRESHOLD_=65536 turns off glibc's adaptive mmap threshold, so
                         # every numpy temporary over 128 kB is a fresh mmap (page faults on each batch)
                         "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 1 << 30,
                         "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 1 << 25})
        try:
            if workers is not None:
                # no dashboard, and the scheduler's web server on a free port (":0"): a fixed 8787 clashes
                # with any other local cluster on the machine
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                            dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"},
                                            silence_logs=50, timeout=connect_seconds * 3)
                self.client = Client(self.cluster, timeout=connect_seconds)
                self.client.wait_for_workers(workers, timeout=connect_seconds * 3)
            else:
                # Client's own timeout does not bound every phase of the handshake (a server that accepts
                # and never answers holds it for ever): the deadline is ours
                probe_scheduler(scheduler, max(deadline - time.monotonic(), 0.1), stated=connect_seconds)
                self.client = call_within(lambda: Client(scheduler, timeout=connect_seconds, set_as_default=False),
                                          max(deadline - time.monotonic(), 0.1), on_late=close_quietly)
                self.client.wait_for_workers(1, timeout=connect_seconds)
        except KeyboardInterrupt:
            self.close()
            raise
        except ClusterError:
            self.close()
            raise
        except Exception as exc:  # broad-except: OSError, TimeoutError, CommClosedError ... all mean "unreachable"
            self.close()
            where = f"scheduler {scheduler}" if scheduler else f"a local cluster of {workers} workers"
            raise ClusterError(f"cannot reach {where} within {connect_seconds:g} s: "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")) from None
        self.workers = len(self.client.scheduler_info()["workers"])

    def worker_pids(self) -> dict[str, int]:
        """Process id of every worker (for process accounting and fault tests)."""
        return self.client.run(os.getpid)

    def _run(self, problem, requests, jobs, n_codes, on_batch) -> list[BatchResult]:
        from distributed import KilledWorker, as_completed

        if sum(m for _, _, m in jobs) < self.local_runs:  # same batches, same seeds: same histograms
            return super()._run(problem, requests, jobs, n_codes, on_batch)

        # the problem travels with each task (a few kB): a worker that dies loses nothing it holds
        futures = [self.client.submit(worker_sample_batch, problem, requests[k].inp, m, s, n_codes, requests[k].half,
                                      pure=False) for k, s, m in jobs]
        runs = {f.key: m for f, (_, _, m) in zip(futures, jobs)}
        try:
            for f in as_completed(futures):  # progress as batches land (a failed one raises in gather below)
                if f.status == "finished":
                    on_batch(runs[f.key])
            return self.client.gather(futures)
        except GTMError:
            raise
        except KilledWorker as exc:
            raise ClusterError(f"a batch killed its workers repeatedly: {str(exc).splitlines()[0]}") from None
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"lost the Dask scheduler: {type(exc).__name__}: {str(exc)[:200]}") from None
        finally:
            for f in futures:
                f.release()

    def map_ordered(self, fn, items: Sequence, *, deadline: float | None = None) -> list:
        """As :meth:`Executor.map_ordered`, the items on the workers; past ``deadline`` the unfinished
        ones are cancelled and the list stops at the first of them."""
        from distributed import wait

        futures = self.client.map(fn, list(items), pure=False)
        try:
            if deadline is not None:
                wait(futures, timeout=max(deadline - time.monotonic(), 0.0), return_when="ALL_COMPLETED")
        except TimeoutError:
            pass
        except (OSError,) as exc:
            raise ClusterError(f"lost the Dask scheduler: {type(exc).__name__}: {str(exc)[:200]}") from None
        out = []
        try:
            for f in futures:
                if deadline is not None and not f.done():
                    break
                out.append(f.result())
        except GTMError:
            raise
        except OSError as exc:
            raise ClusterError(f"lost the Dask scheduler: {type(exc).__name__}: {str(exc)[:200]}") from None
        finally:
            self.client.cancel(futures)
        return out

    def info(self, *, reproducible: bool) -> dict:
        d = super().info(reproducible=reproducible)
        d["scheduler"] = self.scheduler or "local cluster"
        return d

    def close(self) -> None:
        client, cluster = self.client, self.cluster
        self.client = self.cluster = None
        if client is not None:
            try:
                if cluster is not None:
                    client.run(close_worker_targets_now)  # end subprocess targets before the workers go
            except Exception:  # broad-except: best effort; the targets' supervisors end them with the worker anyway
                pass
            try:
                client.close(timeout=SHUTDOWN_SECONDS)
            except Exception:  # broad-except: closing must not mask the audit's own error
                pass
        if cluster is not None:
            try:
                cluster.close(timeout=SHUTDOWN_SECONDS)
            except Exception:  # broad-except: as above
                pass


def close_worker_targets_now() -> int:
    """Close this worker's cached subprocess targets (run on every worker at shutdown). A worker that
    never loaded :mod:`audits.targets` has none (looked up, not imported: targets imports this module)."""
    targets = sys.modules.get("audits.targets")
    return targets.close_worker_targets() if targets is not None else 0


@dataclass(frozen=True)
class ExecutionSettings:
    """Where to run: in-process (both None), a local cluster of ``workers`` processes, or ``scheduler``."""

    workers: int | None = None
    scheduler: str | None = None

    def __post_init__(self):
        if self.workers is not None and self.scheduler is not None:
            raise InvalidParameter("give --workers or --scheduler, not both")
        if self.workers is not None and not (1 <= int(self.workers) <= 1024):
            raise InvalidParameter(f"--workers must be in 1..1024, got {self.workers!r}")
        if self.scheduler is not None and not str(self.scheduler).strip():
            raise InvalidParameter("--scheduler must be an address such as tcp://host:8786")

    @property
    def distributed(self) -> bool:
        return self.workers is not None or self.scheduler is not None


def make_executor(settings: ExecutionSettings | None = None) -> Executor:
    """The executor ``settings`` ask for (in-process by default)."""
    if settings is None or not settings.distributed:
        return InProcess()
    return DaskExecutor(workers=settings.workers, scheduler=settings.scheduler)

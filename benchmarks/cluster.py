"""``--workers N`` / ``--scheduler ADDRESS`` for the benchmark scripts: where their audits run.

The same meaning as on ``gtm audit`` / ``gtm bench`` / ``gtm certify`` (docs/distributed.md): without
either flag everything runs in this process; ``--workers N`` starts a local Dask cluster of N worker
processes (and stops it at the end), ``--scheduler tcp://host:8786`` uses a running one. The layer is
:mod:`audits.execution`: a script hands whole units of work (one seeded audit each) to
:meth:`~audits.execution.Executor.map_ordered` and gets the results back in order, so its output does
not depend on where the units ran - every unit carries its own seed.

On a remote cluster the workers import the script's module (``benchmarks.*``, not part of the
installed package): start them from the checkout root with ``PYTHONPATH=.``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Iterable, Iterator

from audits.execution import Executor, ExecutionSettings, make_executor
from gtm_core.errors import GTMError


def add_execution_arguments(ap: argparse.ArgumentParser) -> None:
    """Add ``--workers N`` and ``--scheduler ADDRESS`` to a script's arguments."""
    ap.add_argument("--workers", type=int, default=None,
                    help="run the audits on a local Dask cluster of N worker processes (started and stopped here)")
    ap.add_argument("--scheduler", default=None,
                    help="address of a running Dask scheduler (tcp://host:8786) to run the audits on")


def executor_from(args: argparse.Namespace, prog: str) -> Executor:
    """The executor ``--workers`` / ``--scheduler`` ask for (in-process without them). Bad flags or an
    unreachable scheduler: one line on stderr and exit 2, before any work."""
    try:
        return make_executor(ExecutionSettings(workers=args.workers, scheduler=args.scheduler))
    except GTMError as exc:
        print(f"{prog}: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        raise SystemExit(2) from None


def ordered(executor: Executor, fn: Callable, items: Iterable, chunk: int | None = None) -> Iterator:
    """``fn(x)`` for every item, yielded in item order as soon as its chunk is done (for progress lines).

    In-process a chunk is one item (each result as soon as it exists); on a cluster it is ``chunk``
    items (default four per worker) computed in parallel."""
    items = list(items)
    if chunk is None:
        chunk = 1 if executor.kind == "in-process" else 4 * max(1, int(executor.workers))
    for i in range(0, len(items), chunk):
        yield from executor.map_ordered(fn, items[i:i + chunk])


def execution_record(executor: Executor) -> dict:
    """What a results file records about where it ran (results do not depend on it)."""
    return {"kind": executor.kind, "workers": executor.workers,
            "scheduler": getattr(executor, "scheduler", None) or ("local cluster" if executor.kind != "in-process"
                                                                  else None)}


def scheduler_address(executor: Executor) -> str | None:
    """The address of the executor's scheduler (None in-process): for a ``gtm`` subprocess to join it."""
    client = getattr(executor, "client", None)
    return None if client is None else client.scheduler.address


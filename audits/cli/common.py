"""Shared command-line plumbing: exit codes, one-line errors, output paths checked before work, JSON output
(through the library's one atomic writer, :func:`gtm_core.files.write_atomic`)."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterable

import click

from gtm_core.errors import GTMError
from gtm_core.files import TEMPORARY_SUFFIX, jsonable, write_atomic

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE = 0, 1, 2


class UsageFailure(click.ClickException):
    """Bad usage or bad input: one line on stderr, exit 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None):
        click.echo(f"gtm: error: {self.format_message()}", err=True)


def guard(fn):
    """Turn every GTMError (and other bad-input errors) into a one-line message and exit 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except GTMError as exc:
            raise UsageFailure(_one_line(exc)) from None
        except (OSError, ValueError) as exc:
            raise UsageFailure(_one_line(exc)) from None
        except (ArithmeticError, RecursionError, MemoryError) as exc:
            # an input outside what float64 or the recursion limit can handle: still bad input
            raise UsageFailure(f"cannot handle this input ({type(exc).__name__}: {_one_line(exc)})") from None
        except Exception as exc:  # broad-except: exit 1 means "a check failed", never "gtm crashed"
            raise UsageFailure(f"internal error ({type(exc).__name__}: {_one_line(exc)}); please report it") from None

    return wrapper


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def check_writable(path: str | os.PathLike | None, option: str = "--json", *,
                   protected: Iterable[str | os.PathLike | None] = (),
                   protected_temporaries: Iterable[str | os.PathLike | None] = ()) -> Path | None:
    """Validate an output path *before* doing work, so no partial output is ever written.

    ``protected``: files the command must never overwrite (its inputs, a deployment's state, key
    and lock); ``protected_temporaries``: files whose temporary siblings (``.NAME.*.tmp``) are
    protected too. Both are compared after resolving links, so a symlink or a ``..`` path to a
    protected file is refused like the file itself.
    """
    if path is None:
        return None
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise UsageFailure(f"{option} path is a directory: {str(p)!r}")
    if not parent.exists():
        raise UsageFailure(f"{option} directory does not exist: {str(parent)!r}")
    if not os.access(parent, os.W_OK):
        raise UsageFailure(f"{option} directory is not writable: {str(parent)!r}")
    real = os.path.realpath(p)
    for q in protected:
        if q is not None and (real == os.path.realpath(q) or same_file(p, q)):
            raise UsageFailure(f"{option} {str(p)!r} would overwrite {str(q)!r}, which this command must not touch")
    for q in protected_temporaries:
        if q is None:
            continue
        rq = os.path.realpath(q)
        name = os.path.basename(real)
        if os.path.dirname(real) == os.path.dirname(rq) and name.startswith(f".{os.path.basename(rq)}.") \
                and name.endswith(TEMPORARY_SUFFIX):
            raise UsageFailure(f"{option} {str(p)!r} is a temporary file of {str(q)!r}")
    return p


def same_file(a, b) -> bool:
    """True if both paths exist and are the same file (hard links included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write_json(path: Path | None, payload: Any) -> None:
    if path is None:
        return
    write_atomic(path, json.dumps(jsonable(payload), indent=2, sort_keys=True) + "\n")


def parse_float_list(text: str, option: str) -> list[float]:
    """A comma-separated list of numbers given to ``option``."""
    return _parse_list(text, option, float, "numbers")


def parse_int_list(text: str, option: str) -> list[int]:
    """A comma-separated list of integers given to ``option``."""
    return _parse_list(text, option, int, "integers")


def _parse_list(text: str, option: str, kind, noun: str) -> list:
    try:
        values = [kind(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise UsageFailure(f"{option} must be a comma-separated list of {noun}, got {text!r}") from None
    if not values:
        raise UsageFailure(f"{option} must not be empty")
    return values


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def execution_options(fn):
    """``--workers N`` / ``--scheduler ADDRESS``: run the heavy sampling on Dask (docs/distributed.md)."""
    fn = click.option("--scheduler", default=None,
                      help="address of a running Dask scheduler (tcp://host:8786) to run the sampling on")(fn)
    fn = click.option("--workers", type=int, default=None,
                      help="run the sampling on a local Dask cluster of N worker processes (started and stopped here)")(fn)
    return fn


def make_executor(workers: int | None, scheduler: str | None):
    """The executor the flags ask for (in-process without them); bad flags exit 2 before any work."""
    from audits.execution import ExecutionSettings, make_executor as build

    try:
        settings = ExecutionSettings(workers=workers, scheduler=scheduler)
    except GTMError as exc:
        raise UsageFailure(_one_line(exc)) from None
    return build(settings)

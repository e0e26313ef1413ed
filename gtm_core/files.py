"""Crash-safe file output and JSON-safe values, shared by the library, the proofs and the CLI.

:func:`write_atomic` is the one atomic writer of the project (the deployment's state and key
files, every ``--json`` output, reports and certificates). :func:`jsonable` is the one
conversion of results to JSON-safe values.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["write_atomic", "jsonable", "fsync_directory", "TEMPORARY_SUFFIX"]

# Temporaries are named ".<name>.<random>.tmp" next to their target, so that a reader of the
# directory (the deployment's stale-temporary sweep) can recognise those of a killed writer.
TEMPORARY_SUFFIX = ".tmp"


def fsync_directory(directory: str | os.PathLike) -> None:
    """fsync a directory, so a rename inside it is durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _public_mode() -> int:
    # the usual permissions of a new file (0666 minus the umask); mkstemp creates 0600
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: str | os.PathLike, data: str | bytes, *, mode: int | None = None,
                 exclusive: bool = False, hook: Callable[[str], None] | None = None) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old or the new file, never a mixture.

    A temporary file in the same directory is written (``str`` as UTF-8), fsync'ed, given
    ``mode`` (default: 0666 minus the umask), then published with ``os.replace`` -- or, with
    ``exclusive=True``, with ``os.link``, which raises :class:`FileExistsError` if ``path``
    exists -- and the directory is fsync'ed (durable also after a power loss). On any error the
    temporary is removed. ``hook`` (fault injection for crash tests) is called with
    ``"write:tmp_written"``, ``"write:tmp_fsynced"``, ``"write:renamed"`` and
    ``"write:dir_fsynced"``.
    """
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    directory = path.parent if str(path.parent) else Path(".")
    fault = hook if hook is not None else (lambda point: None)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, dir=directory)
    try:
        try:
            os.fchmod(fd, _public_mode() if mode is None else mode)
            view = memoryview(raw)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            fault("write:tmp_written")
            os.fsync(fd)
        finally:
            os.close(fd)
        fault("write:tmp_fsynced")
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
        fault("write:renamed")
        fsync_directory(directory)
        fault("write:dir_fsynced")
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def jsonable(obj: Any):
    """JSON-safe copy: +-inf/nan as strings, tuples as lists, numpy scalars as Python numbers,
    dictionary keys as strings; everything else unchanged."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return jsonable(obj.item())
    return obj

"""Reading untrusted input files and documents: bounded, never blocking, never a traceback.

Every file ``gtm`` reads on a user's behalf (configurations, certificates, streams, datasets) goes
through :func:`read_text_file`, and every JSON document from outside (files, target answers)
through :func:`parse_json`:

* special files are refused *before* anything blocks: the path is opened with ``O_NONBLOCK`` and
  must be a regular file (a FIFO, ``/dev/zero``, a socket or a directory is refused);
* the size is bounded (``max_bytes``), so ``/dev/zero``-like inputs cannot exhaust memory;
* the text must be UTF-8;
* JSON and TOML nesting is bounded (:data:`MAX_NESTING`); Python's recursion limit is never
  what stops a hostile document;
* non-finite numbers (``NaN``, ``Infinity``) and duplicate keys in an object are refused in JSON
  (where readers disagree on which duplicate wins, none of them may be relied on).

All failures raise the ``error`` class given by the caller (a :class:`~gtm_core.errors.GTMError`),
with a one-line message naming the input.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from typing import Any

from .errors import GTMError, InvalidParameter

MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_NESTING = 64


def read_text_file(path, *, what: str = "input", max_bytes: int = MAX_INPUT_BYTES,
                   error: type[GTMError] = InvalidParameter) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``max_bytes``), else ``error``."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "" or "\x00" in str(path):
        raise error(f"{what} path must be a non-empty file path, got {path!r}")
    name = str(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise error(f"{what} file not found: {name!r}") from None
    except IsADirectoryError:
        raise error(f"{what} path is a directory: {name!r}") from None
    except PermissionError:
        raise error(f"{what} file not readable: {name!r}") from None
    except OSError as exc:
        raise error(f"cannot read {what} {name!r}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{what} path is a directory: {name!r}")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {name!r} is not a regular file (a FIFO, device or socket is refused)")
        if info.st_size > max_bytes:
            raise error(f"{what} {name!r} is larger than {max_bytes} bytes")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            except OSError as exc:
                raise error(f"cannot read {what} {name!r}: {exc.strerror or exc}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise error(f"{what} {name!r} is larger than {max_bytes} bytes")
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{what} {name!r} is not UTF-8 text") from None


def nesting_depth_exceeds(text: str, limit: int = MAX_NESTING) -> bool:
    """True if brackets/braces in ``text`` nest deeper than ``limit`` (strings are skipped).

    A conservative pre-check for JSON and TOML: it counts ``[``/``{`` outside double- and
    single-quoted strings, so it can only over-estimate the real nesting of a valid document.
    """
    depth = 0
    quote = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth = max(0, depth - 1)
    return False


def reject_constant(name: str):
    raise ValueError(f"non-finite number {name} is not allowed")


def reject_duplicate_keys(pairs: list) -> dict:
    """``object_pairs_hook`` of :func:`parse_json`: the object, unless a key occurs twice."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:80]!r} in an object")
        out[key] = value
    return out


def parse_json(text: str | bytes, *, what: str = "input", error: type[GTMError] = InvalidParameter,
               max_nesting: int = MAX_NESTING) -> Any:
    """Parse a JSON document from outside: bounded nesting, finite numbers only, else ``error``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise error(f"{what} is not UTF-8 text") from None
    if nesting_depth_exceeds(text, max_nesting):
        raise error(f"{what} nests deeper than {max_nesting} levels")
    try:
        return json.loads(text, parse_constant=reject_constant, object_pairs_hook=reject_duplicate_keys)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise error(f"not valid JSON ({what}): {str(exc)[:160]}") from None


def parse_toml(text: str, *, what: str = "input", error: type[GTMError] = InvalidParameter,
               max_nesting: int = MAX_NESTING) -> dict:
    """Parse a TOML document from outside: bounded nesting, else ``error``."""
    if nesting_depth_exceeds(text, max_nesting):
        raise error(f"{what} nests deeper than {max_nesting} levels")
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        raise error(f"not valid TOML ({what}): {str(exc)[:160]}") from None

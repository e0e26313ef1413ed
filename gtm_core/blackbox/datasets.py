"""Datasets and functions for the black-box evaluator from files and names: a dataset read from a
CSV (numeric columns) or JSON file, and the function to wrap - a built-in
(:data:`.functions.BUILTIN`) or any ``module:callable`` importable from the working directory.

Bad input raises :class:`~gtm_core.errors.InvalidParameter` naming the option and the value.
"""

from __future__ import annotations

import csv
import io
import os
import pkgutil
import sys
from pathlib import Path

from ..errors import InvalidParameter
from ..inputs import parse_json, read_text_file
from .evaluator import check_dataset
from .functions import BUILTIN

__all__ = ["RECORD_DIM", "build_function", "read_dataset"]

#: the record dimension each built-in function takes
RECORD_DIM = {"median": 1, "mean": 1, "slope": 2, "tukey-center": 2, "center-3d": 3}


def build_function(name: str, config):
    """The function ``name`` names, on the output domain of ``config`` (an EvaluatorConfig), and whether
    it is monotone (True/False for a built-in, None for ``module:callable``: monotone only if the
    caller says so)."""
    grid = [p[0] for p in config.domain] if config.d == 1 else [tuple(p) for p in config.domain]
    if name in BUILTIN:
        factory, dim, monotone = BUILTIN[name]
        if dim != config.d:
            raise InvalidParameter(f"--function {name} has outputs of dimension {dim}, the domain has dimension {config.d}")
        return factory(grid), monotone
    if ":" in name:
        added = os.getcwd() not in sys.path  # module:callable is resolved from the working directory too
        if added:
            sys.path.insert(0, os.getcwd())
        try:
            fn = pkgutil.resolve_name(name)
        except Exception as exc:  # the user's module may raise anything while it is imported: bad input
            raise InvalidParameter(f"--function {name!r} cannot be imported: {type(exc).__name__}: {exc}") from None
        finally:
            if added:
                sys.path.remove(os.getcwd())
        if not callable(fn):
            raise InvalidParameter(f"--function {name!r} is not callable")
        return fn, None  # monotone only if the user says so (--depth-method monotone)
    raise InvalidParameter(f"--function must be one of {', '.join(BUILTIN)} or module:callable, got {name!r}")


def read_dataset(path: str, columns: str | None, function: str) -> list:
    """The dataset in ``path`` (``.json``: a list, or an object with a ``dataset`` list, of numbers,
    lists or records whose ``columns`` are taken; anything else: CSV with a header and ``columns``),
    checked by :func:`.evaluator.check_dataset` and against the record dimension of ``function``."""
    p = Path(path)
    text = read_text_file(path, what="--data")
    cols = [c.strip() for c in columns.split(",")] if columns else None
    if p.suffix.lower() == ".json":
        raw = parse_json(text, what="--data")
        if isinstance(raw, dict) and "dataset" in raw:
            raw = raw["dataset"]
        if cols and isinstance(raw, list) and raw and isinstance(raw[0], dict):
            try:
                raw = [[r[c] for c in cols] if len(cols) > 1 else r[cols[0]] for r in raw]
            except KeyError as exc:
                raise InvalidParameter(f"--columns: record has no field {exc.args[0]!r}") from None
    else:
        try:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error as exc:
            raise InvalidParameter(f"--data is not valid CSV: {exc}") from None
        if not rows:
            raise InvalidParameter(f"--data file is empty: {path!r}")
        header, body = rows[0], rows[1:]
        if not cols:
            raise InvalidParameter(f"--columns is required for CSV data (columns: {', '.join(header)})")
        idx = []
        for c in cols:
            if c not in header:
                raise InvalidParameter(f"--columns: no column {c!r} in {path!r} (columns: {', '.join(header)})")
            idx.append(header.index(c))
        raw = []
        for i, r in enumerate(body, start=2):
            try:
                vals = [float(r[j]) for j in idx]
            except (ValueError, IndexError):
                raise InvalidParameter(f"--data row {i}: column(s) {columns} not numeric: {r!r:.80}") from None
            raw.append(vals if len(vals) > 1 else vals[0])
    data = check_dataset(raw)
    want = RECORD_DIM.get(function)
    if want is not None:
        got = len(data[0]) if isinstance(data[0], tuple) else 1
        if got != want:
            raise InvalidParameter(f"--function {function} takes records of dimension {want}, the dataset has dimension {got}")
    return data

"""Finite codes for the outputs of an OpenDP measurement (fitted on pilot outputs only).

Booleans, integers (up to :data:`MAX_EXACT_INTEGERS` distinct pilot values, else binned), strings
and None are their own codes; a dict is coded by its set of released keys plus its binned values;
tuples and lists element by element. Float bins are the pooled pilot quantiles (``bins``
equal-probability bins for a scalar, fewer per element of a sequence so that the code book stays
below :data:`audits.finite.MAX_CODES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from gtm_core.errors import InvalidParameter, UnsupportedConfiguration
from gtm_core.validation import is_integer, is_real

MAX_EXACT_INTEGERS = 64  # integer outputs with more distinct pilot values than this are binned
DEFAULT_BINS = 32
DICT_VALUE_BINS = 4

# ---------------------------------------------------------------------------------------------


def _plain(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


@dataclass(frozen=True)
class Bins:
    """Float bins: code j for edges[j-1] <= x < edges[j] (j = 0 below the first edge)."""

    edges: tuple[float, ...]

    @classmethod
    def fit(cls, values: Sequence[float], bins: int) -> "Bins":
        v = np.asarray([float(x) for x in values if math.isfinite(float(x))])
        if v.size == 0 or bins < 2:
            return cls(())
        qs = np.quantile(v, np.linspace(0, 1, bins + 1)[1:-1])
        return cls(tuple(float(e) for e in np.unique(qs)))

    def code(self, x) -> str:
        x = float(x)
        if math.isnan(x):
            return "nan"
        return f"b{int(np.searchsorted(self.edges, x, side='right'))}"

    def codes(self) -> list[str]:
        return [f"b{j}" for j in range(len(self.edges) + 1)] + ["nan"]


@dataclass(frozen=True)
class OutputCoder:
    """Maps a measurement's output to a finite code (fitted on pilot outputs only).

    ``shape``: ``"bool"``, ``"str"``, ``"none"``, ``"binned"`` (ints or floats, through ``bins``:
    integers with at most :data:`MAX_EXACT_INTEGERS` distinct pilot values get one bin per value),
    ``"dict"`` (released keys + binned values through ``bins``), ``"seq"``
    (``parts``: one coder per position) or ``"optional"`` (``None`` or the output of ``parts[0]``).
    """

    shape: str
    bins: Bins | None = None
    parts: tuple = ()

    @classmethod
    def fit(cls, outputs: Sequence, bins: int = DEFAULT_BINS) -> "OutputCoder":
        outs = [_plain(o) for o in outputs]
        if not outs:
            raise InvalidParameter("no pilot outputs to fit the output coding on")
        first = outs[0]
        if all(isinstance(o, bool) for o in outs):
            return cls("bool")
        if all(o is None for o in outs):
            return cls("none")
        if any(o is None for o in outs):  # an optional release (e.g. private selection: nothing or a candidate)
            return cls("optional", None, (cls.fit([o for o in outs if o is not None], bins),))
        if all(isinstance(o, str) for o in outs):
            return cls("str")
        if all(is_integer(o) for o in outs):
            distinct = sorted(set(int(o) for o in outs))
            if len(distinct) <= MAX_EXACT_INTEGERS:  # one bin per pilot value (the end bins are open)
                return cls("binned", Bins(tuple(float(v) for v in distinct[1:])))
            return cls("binned", Bins.fit(outs, bins))
        if all(is_real(o) for o in outs):
            return cls("binned", Bins.fit(outs, bins))
        if all(isinstance(o, dict) for o in outs):
            values = [v for o in outs for v in o.values()]
            if all(is_real(v) for v in values):
                return cls("dict", Bins.fit(values, DICT_VALUE_BINS))
            return cls("dict", None)
        if all(isinstance(o, (list, tuple)) for o in outs):
            width = max(len(o) for o in outs)
            per = max(2, int(bins ** (1.0 / max(width, 1))))
            parts = tuple(cls.fit([o[i] for o in outs if len(o) > i], per) for i in range(width))
            return cls("seq", None, parts)
        raise UnsupportedConfiguration(f"cannot code outputs of type {type(first).__name__} finitely "
                                       f"(supported: bool, int, float, str, None, dict, tuple, list)")

    def code(self, out) -> str:
        o = _plain(out)
        s = self.shape
        if s == "bool":
            return str(bool(o)) if isinstance(o, bool) else f"?{type(o).__name__}"
        if s in ("str", "none"):
            return str(o)
        if s == "optional":
            return "None" if o is None else self.parts[0].code(o)
        if s == "binned":
            return self.bins.code(o)
        if s == "dict":
            if not isinstance(o, dict):
                return f"?{type(o).__name__}"
            items = sorted(o.items(), key=lambda kv: str(kv[0]))
            if self.bins is None:
                return "{" + ",".join(str(k) for k, _ in items) + "}"
            return "{" + ",".join(f"{k}:{self.bins.code(v)}" for k, v in items) + "}"
        if s == "seq":
            if not isinstance(o, (list, tuple)):
                return f"?{type(o).__name__}"
            cells = [self.parts[i].code(x) if i < len(self.parts) else "?" for i, x in enumerate(o)]
            return "(" + ",".join(cells) + ")"
        raise InvalidParameter(f"unknown output shape {s!r}")  # unreachable: shapes are set by fit

    def alphabet(self) -> list[str] | None:
        """Every code, when the shape makes them enumerable (else the engine's pilot finds them)."""
        if self.shape == "bool":
            return ["True", "False"]
        if self.shape == "binned":
            return self.bins.codes()
        return None

    @property
    def ordered(self) -> int:
        """Number of leading alphabet codes that are ordered (bins), 0 when the codes have no order."""
        return len(self.bins.edges) + 1 if self.shape == "binned" else 0

    def describe(self) -> dict:
        d = {"shape": self.shape}
        if self.bins is not None:
            d["bin_edges"] = list(self.bins.edges)
        if self.parts:
            d["parts"] = [p.describe() for p in self.parts]
        return d

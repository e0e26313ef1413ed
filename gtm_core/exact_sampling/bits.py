"""Sources of uniformly random bits for the exact samplers.

:class:`SystemBits` reads the operating system's cryptographically secure generator
(``os.urandom`` through :mod:`secrets`); it is the only source a deployment may use.
:class:`SeededBits` is a deterministic stream (numpy's PCG64 seeded with an integer) and
:class:`GeneratorBits` draws from a caller's ``numpy.random.Generator``; both are for tests,
audits and reproducible experiments and carry ``deployable = False`` ("not for deployment").
"""

from __future__ import annotations

import os
import secrets
from abc import ABC, abstractmethod

import numpy as np

from ..errors import InvalidParameter
from ..validation import check_nonnegative_int

__all__ = ["BitSource", "SystemBits", "SeededBits", "GeneratorBits", "NOT_FOR_DEPLOYMENT"]

NOT_FOR_DEPLOYMENT = "seeded generator: not for deployment"


class BitSource(ABC):
    """A stream of independent fair bits."""

    #: True only for the operating system's CSPRNG.
    deployable: bool = False

    @abstractmethod
    def bits(self, k: int) -> int:
        """k fresh bits as an integer in [0, 2^k) (k >= 0)."""

    @abstractmethod
    def words(self, n: int) -> np.ndarray:
        """n fresh 64-bit words (uint64 array), for vectorised exact Bernoulli draws."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SystemBits(BitSource):
    """The operating system's cryptographically secure generator (``secrets`` / ``os.urandom``)."""

    deployable = True

    def bits(self, k: int) -> int:
        return secrets.randbits(k) if k > 0 else 0

    def words(self, n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy() if n > 0 else np.empty(0, np.uint64)


class _Uint64Stream(BitSource):
    """Bits from a numpy bit generator's raw 64-bit outputs (not for deployment)."""

    deployable = False

    def __init__(self, bit_generator: np.random.BitGenerator):
        self._bg = bit_generator

    def bits(self, k: int) -> int:
        if k <= 0:
            return 0
        if k <= 64:
            return int(self._bg.random_raw()) >> (64 - k)
        nw = (k + 63) // 64
        acc = 0
        for w in self._bg.random_raw(nw).tolist():
            acc = (acc << 64) | int(w)
        return acc >> (64 * nw - k)

    def words(self, n: int) -> np.ndarray:
        return np.asarray(self._bg.random_raw(n), dtype=np.uint64) if n > 0 else np.empty(0, np.uint64)


class SeededBits(_Uint64Stream):
    """A deterministic bit stream: PCG64 seeded with ``seed``. Not for deployment."""

    def __init__(self, seed: int):
        self.seed = check_nonnegative_int("seed", seed)
        super().__init__(np.random.PCG64(self.seed))

    def __repr__(self) -> str:
        return f"SeededBits({NOT_FOR_DEPLOYMENT})"


class GeneratorBits(_Uint64Stream):
    """Bits drawn from a caller's ``numpy.random.Generator`` (its bit generator's raw output).
    Reproducible, hence not for deployment."""

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        super().__init__(rng.bit_generator)

    def __repr__(self) -> str:
        return f"GeneratorBits({NOT_FOR_DEPLOYMENT})"

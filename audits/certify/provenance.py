"""Provenance of a certificate: package and library versions, platform, seed and timings."""

from __future__ import annotations

import platform
from datetime import datetime, timezone
from importlib import metadata

from gtm_core import __version__

from .model import CERT_SCHEMA

LIBRARIES = ("numpy", "scipy", "mpmath", "python-flint", "z3-solver", "cvc5", "matplotlib", "opendp", "click")


def library_versions() -> dict:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance(seed: int, seeded: bool, timings: dict, mode: str, budgets: dict) -> dict:
    return {
        "gtm_version": __version__,
        "certificate_schema": CERT_SCHEMA,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "seed": seed,
        "seeded": seeded,
        "seed_note": ("seeded by the user: reproducible, not for deployment" if seeded
                      else "seed drawn from the operating system and recorded for reproducibility"),
        "mode": mode,
        "budgets_seconds": budgets,
        "timings_seconds": timings,
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


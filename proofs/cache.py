"""The on-disk cache of lemma-check results behind ``gtm certify``'s ``privacy.lemma-checks`` claim.

A run of the selected checks (:mod:`proofs.registry`) is stored under a key: the SHA-256 of the
proofs/ sources, the solver versions and the selected names. The key is computed from public data,
so a stored entry is evidence of nothing by itself; an entry is reused only if

* its directory and the entry are owned by this user and writable by nobody else, and the entry is a
  regular file (not a link);
* it is JSON without duplicate keys, carries the full key, and lists exactly the checks the registry
  selects for those names in this version, each with this version's mutant count, a killed count
  within it, a status and an ``ok`` that follows from them (:func:`entry_problems`).

Anything else is ignored and the checks run again. Entries are written with
:func:`gtm_core.files.write_atomic` (a fresh temporary next to the target, so a planted link is
replaced, never followed), mode 0600; a directory created here is 0700. Inside :func:`fresh_runs`
(``gtm certify --verify --rerun``) no entry is reused: the checks really run.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import stat
from pathlib import Path

from gtm_core.errors import GTMError
from gtm_core.files import write_atomic
from gtm_core.inputs import parse_json, read_text_file
from gtm_core.validation import is_real

__all__ = ["cache_key", "expected_checks", "entry_problems", "fresh_runs", "lemma_results", "MAX_ENTRY_BYTES"]

MAX_ENTRY_BYTES = 4 * 1024 * 1024
PROVED = ("proved", "certified")
_REUSE = contextvars.ContextVar("gtm_proofs_cache_reuse", default=True)


@contextlib.contextmanager
def fresh_runs():
    """Within this block :func:`lemma_results` never reuses a cached entry (it still writes one)."""
    token = _REUSE.set(False)
    try:
        yield
    finally:
        _REUSE.reset(token)


def cache_key(registry, names) -> str:
    """SHA-256 of the registry's sources (every ``*.py`` next to it), its solver versions and ``names``."""
    src = Path(registry.__file__).parent
    h = hashlib.sha256()
    for f in sorted(src.glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(json.dumps(registry.versions(), sort_keys=True).encode())
    h.update(json.dumps(sorted(names)).encode())
    return h.hexdigest()


def expected_checks(registry, names) -> dict[str, int]:
    """{check key: number of mutants} of the checks ``registry.select(names)`` runs in this version."""
    return {lm.key: len(lm.mutants) for lm in registry.select(list(names))}


def entry_problems(results, expected: dict[str, int]) -> list[str]:
    """Why ``results`` (a cached {check: verdict}) is not a run of exactly the ``expected`` checks."""
    if not isinstance(results, dict):
        return ["results is not an object"]
    problems = []
    if set(results) != set(expected):
        problems.append(f"lists checks {sorted(results)[:5]}, this version selects {sorted(expected)[:5]} "
                        f"({len(results)} vs {len(expected)})")
        return problems
    for key, want in expected.items():
        r = results[key]
        if not isinstance(r, dict):
            problems.append(f"{key}: not an object")
            continue
        total, killed, status, ok = r.get("mutants_total"), r.get("mutants_killed"), r.get("status"), r.get("ok")
        if type(total) is not int or total != want:
            problems.append(f"{key}: mutants_total {total!r}, this version has {want}")
        elif type(killed) is not int or not 0 <= killed <= total:
            problems.append(f"{key}: mutants_killed {killed!r} is not in 0..{total}")
        elif not isinstance(status, str) or not isinstance(ok, bool) or ok != (status in PROVED and killed == total):
            problems.append(f"{key}: ok={ok!r} does not follow from status {status!r} and {killed}/{total} mutants")
    return problems


def _private_to_me(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read_entry(path: Path, key: str, expected):
    """The (results, seconds) of a trustworthy entry at ``path``, else None (``expected()``: the
    {check: mutants} the entry must list)."""
    try:
        if not _private_to_me(os.stat(path.parent)):
            return None
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or not _private_to_me(info):
            return None
        data = parse_json(read_text_file(path, what="lemma-check cache entry", max_bytes=MAX_ENTRY_BYTES),
                          what="lemma-check cache entry")
    except (OSError, GTMError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    seconds = data.get("seconds")
    if not is_real(seconds) or entry_problems(data.get("results"), expected()):
        return None
    return data["results"], seconds


def _write_entry(path: Path, entry: dict) -> None:
    directory = path.parent
    try:
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private_to_me(os.stat(directory)):
            return  # a directory others can write to: they could swap entries, so store nothing there
        write_atomic(path, json.dumps(entry, sort_keys=True), mode=0o600)
    except OSError:
        pass  # an unwritable cache only costs time


def lemma_results(names, registry, directory) -> tuple[dict, bool, str, float]:
    """Run the checks ``registry.select(names)`` (or reuse a trustworthy cached run, see the module
    docstring) and return ({check: verdict}, reused from the cache, cache key, seconds of the run)."""
    names = list(names)
    key = cache_key(registry, names)
    path = Path(directory) / f"prove-{key[:32]}.json"
    if _REUSE.get():
        hit = _read_entry(path, key, lambda: expected_checks(registry, names))
        if hit is not None:
            return hit[0], True, key, hit[1]
    report = registry.run(registry.select(names))
    results = {}
    for r in report.results:
        d = r.to_dict()
        results[d["lemma"]] = {"ref": d.get("ref"), "status": d["status"], "ok": bool(d["ok"]),
                               "method": d.get("method"), "mutants_killed": d.get("mutants_killed"),
                               "mutants_total": d.get("mutants_total"), "seconds": d.get("seconds")}
    seconds = round(report.seconds, 3)
    _write_entry(path, {"key": key, "results": results, "seconds": seconds})
    return results, False, key, seconds

"""The lemma-check cache (proofs.cache): a planted entry is not trusted, writes never follow a planted
link, ``fresh_runs`` really runs. A fake registry (two checks with 3 and 2 mutants) stands in for the
solvers: it counts how often the checks run."""

import json
import os
import types

import pytest

from proofs import cache


class _Result:
    def __init__(self, key, total):
        self.key, self.total = key, total

    def to_dict(self):
        return {"lemma": self.key, "ref": "Lemma", "status": "proved", "ok": True, "method": "z3+cvc5",
                "mutants_killed": self.total, "mutants_total": self.total, "seconds": 0.1}


@pytest.fixture
def registry(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "registry.py").write_text("# the fake registry's sources\n")
    checks = [types.SimpleNamespace(key="lemma17", mutants=[None] * 3),
              types.SimpleNamespace(key="theorem21", mutants=[None] * 2)]
    calls = []

    def run(lemmas, progress=None):
        calls.append(lemmas)
        return types.SimpleNamespace(results=[_Result(c.key, len(c.mutants)) for c in lemmas], seconds=0.5)

    reg = types.SimpleNamespace(__file__=str(src / "registry.py"), run=run, select=lambda names: checks,
                                versions=lambda: {"z3": "x"})
    reg.calls = calls
    return reg


NAMES = ("lemma17", "theorem21")


def _entry_path(registry, directory):
    return directory / f"prove-{cache.cache_key(registry, NAMES)[:32]}.json"


def _plant(registry, directory, results, mode=0o600):
    directory.mkdir(mode=0o700, exist_ok=True)
    path = _entry_path(registry, directory)
    path.write_text(json.dumps({"key": cache.cache_key(registry, NAMES), "results": results, "seconds": 1.0}))
    os.chmod(path, mode)
    return path


def _honest(total17=3, total21=2):
    return {"lemma17": {"status": "proved", "ok": True, "mutants_killed": total17, "mutants_total": total17},
            "theorem21": {"status": "proved", "ok": True, "mutants_killed": total21, "mutants_total": total21}}


def test_an_honest_entry_is_reused(registry, tmp_path):
    d = tmp_path / "cache"
    first = cache.lemma_results(NAMES, registry, d)
    again = cache.lemma_results(NAMES, registry, d)
    assert not first[1] and again[1] and len(registry.calls) == 1 and again[0] == first[0]


@pytest.mark.parametrize("results", [
    {"made-up": {"status": "proved", "ok": True, "mutants_killed": 0, "mutants_total": 0}},  # the attack
    {"lemma17": _honest()["lemma17"]},  # a check missing
    _honest(total17=1),  # fewer mutants than this version has
    {**_honest(), "lemma17": {"status": "failed", "ok": True, "mutants_killed": 3, "mutants_total": 3}},
    {**_honest(), "lemma17": {"status": "proved", "ok": True, "mutants_killed": 4, "mutants_total": 3}},
])
def test_a_planted_entry_that_is_not_this_versions_run_is_ignored_and_the_checks_run(registry, tmp_path, results):
    d = tmp_path / "cache"
    _plant(registry, d, results)
    got, cached, _, _ = cache.lemma_results(NAMES, registry, d)
    assert not cached and len(registry.calls) == 1
    assert set(got) == {"lemma17", "theorem21"} and got["lemma17"]["mutants_total"] == 3
    # the planted entry was replaced by the real run: the next call reuses that
    assert cache.lemma_results(NAMES, registry, d)[1] and len(registry.calls) == 1


def test_the_planted_entry_would_have_been_accepted_on_key_alone(registry, tmp_path):
    """Power of the test above: the planted entry carries the right (public) key; only the content check
    refuses it, and the same content with this version's checks is accepted."""
    d = tmp_path / "cache"
    _plant(registry, d, _honest())
    assert cache.lemma_results(NAMES, registry, d)[1] and not registry.calls


@pytest.mark.parametrize("mode", [0o666, 0o620])
def test_an_entry_others_can_write_is_not_trusted(registry, tmp_path, mode):
    d = tmp_path / "cache"
    _plant(registry, d, _honest(), mode=mode)
    assert not cache.lemma_results(NAMES, registry, d)[1] and len(registry.calls) == 1


def test_an_entry_with_duplicate_keys_is_not_trusted(registry, tmp_path):
    d = tmp_path / "cache"
    path = _plant(registry, d, _honest())
    text = path.read_text()
    path.write_text('{"results": {"made-up": {}}, ' + text[1:])  # a second "results": last key would win
    assert not cache.lemma_results(NAMES, registry, d)[1] and len(registry.calls) == 1


def test_fresh_runs_runs_the_checks_despite_a_valid_entry(registry, tmp_path):
    d = tmp_path / "cache"
    cache.lemma_results(NAMES, registry, d)
    with cache.fresh_runs():
        assert not cache.lemma_results(NAMES, registry, d)[1]
    assert len(registry.calls) == 2
    assert cache.lemma_results(NAMES, registry, d)[1] and len(registry.calls) == 2  # reuse is back afterwards


@pytest.mark.parametrize("suffix", [".tmp", ".json"])
def test_a_planted_link_is_replaced_never_followed(registry, tmp_path, suffix):
    """The old writer wrote ``prove-<key>.tmp`` with write_text, through a planted link to any file."""
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = _entry_path(registry, d).with_suffix(suffix)
    link.symlink_to(victim)
    cache.lemma_results(NAMES, registry, d)
    assert victim.read_text() == "precious\n"
    entry = _entry_path(registry, d)
    assert not entry.is_symlink() and json.loads(entry.read_text())["results"]["lemma17"]["mutants_total"] == 3


def test_a_new_cache_directory_is_0700_and_entries_0600(registry, tmp_path):
    d = tmp_path / "new" / "cache"
    cache.lemma_results(NAMES, registry, d)
    assert (d.stat().st_mode & 0o777) == 0o700
    assert (_entry_path(registry, d).stat().st_mode & 0o777) == 0o600


def test_nothing_is_stored_in_a_directory_others_can_write(registry, tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    cache.lemma_results(NAMES, registry, d)
    assert not any(d.iterdir())

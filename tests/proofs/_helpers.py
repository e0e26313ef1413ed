"""Shared assertions for the lemma-module tests."""

from proofs.core import run_lemma


def assert_lemma_passes(lemma):
    """Every step proved/certified, the chain proved, every mutant killed, every erratum reproduced."""
    r = run_lemma(lemma)
    bad = [(s.kind, s.name, s.detail) for s in r.steps + ([r.chain] if r.chain else []) + r.errata if not s.ok]
    survived = [(m.name, m.detail) for m in r.mutants if not m.ok]
    assert r.status in ("proved", "certified"), bad
    assert not survived, survived
    assert len(r.mutants) >= 2
    return r

"""State file details: only a deployment's own temporaries are swept; the state's size
does not depend on the secret."""

import os
from pathlib import Path

import pytest

from gtm_core import GTMConfig
from gtm_core.deployment import Deployment
from gtm_core.deployment import certificate_record as CR
from gtm_core.deployment import state as S
from gtm_core.files import write_atomic

CONFIG = GTMConfig.from_dict({
    "gtm": {"epsilon": 1.0, "theta": 1.0, "gamma": 1.5, "beta": 0.05},
    "stream": {"eps_t": 0.1, "p_star": 0.5, "horizon": 50},
})


def test_write_atomic_temporaries_match_the_pattern(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append(Path(a).name), real_replace(a, b))[1])
    write_atomic(tmp_path / "a.b", b"x")
    assert len(seen) == 1 and S.temporary_name_pattern(tmp_path / "a.b").fullmatch(seen[0])
    assert not S.temporary_name_pattern(tmp_path / "a").fullmatch(seen[0])


def test_opening_a_sweeps_only_its_own_temporaries(tmp_path):
    a = tmp_path / "a"
    Deployment.create(a, CONFIG, seed=1).close()
    own = tmp_path / ".a.k3x_9zqp.tmp"
    others = [tmp_path / n for n in (".a.b.k3x_9zqp.tmp", ".a.key.k3x_9zqp.tmp", ".a.b.tmp",
                                     ".a.k3x_9zqp.tmp.tmp", ".ab.k3x_9zqp.tmp")]
    for f in [own, *others]:
        f.write_bytes(b"someone else's write in progress")
    Deployment.open(a).close()
    assert not own.exists()
    assert all(f.exists() for f in others)


def test_status_does_not_publish_the_size_and_the_size_does_not_depend_on_eta1(tmp_path):
    """120 deployments with different seeds (different eta_1, drawn to different depths): no
    size in the public status, and identical state-file sizes (eta_1's bits at fixed width)."""
    sizes, widths = set(), set()
    for seed in range(120):
        path = tmp_path / f"d{seed}"
        with Deployment.create(path, CONFIG, seed=seed) as dep:
            status = dep.status_dict()
            if seed % 3 == 0:
                dep._gtm._noise.eta1.enclosure(64 + 7 * seed)  # a step that needed more bits
                dep.step(lambda data=None: -1)
                path = Path(dep.path)
        assert not any("bytes" in k or "size" in k for k in status)
        body = S.read_state_body_unchecked(path)
        widths.add(len(body["secret"]["eta1_bits"]))
        if seed % 3 != 0:
            sizes.add(os.stat(path).st_size)
    assert len(widths) == 1 and len(sizes) == 1


def _record(config_sha256: str) -> dict:
    return CR.certificate_record(certificate_sha256="a" * 64, config_sha256=config_sha256, horizon=3, key_id="b" * 64)


def test_a_state_without_a_certificate_opens_as_uncertified(tmp_path):
    """Every state written before certificates were bound has no such field; it loads unchanged."""
    p = tmp_path / "s"
    Deployment.create(p, CONFIG, seed=1).close()
    assert "certificate" not in S.read_state_body_unchecked(p)
    with Deployment.open(p) as dep:
        assert dep.steps_done == 0
    assert S.read_certificate(p) is None


def test_a_certificate_is_bound_in_the_first_write_authenticated_and_kept(tmp_path):
    import pytest
    from gtm_core.errors import StateError
    from gtm_core.evaluation import BernoulliMechanism
    from gtm_core.reference import default_rng

    p = tmp_path / "s"
    with pytest.raises(StateError, match="another configuration"):
        Deployment.create(p, CONFIG, seed=1, certificate=_record("c" * 64))
    assert sorted(os.listdir(tmp_path)) in ([], ["s.lock"])  # refused before anything was written
    with Deployment.create(p, CONFIG, seed=1, certificate=_record(CONFIG.digest())) as dep:
        assert dep.generation == 1  # one write: the state never existed uncertified
    assert S.read_state_body_unchecked(p)["certificate"] == _record(CONFIG.digest())
    with Deployment.open(p) as dep:
        dep.step(BernoulliMechanism(0.0, default_rng(1)[0]))
    assert S.read_certificate(p) == _record(CONFIG.digest())  # kept by the step's writes


# (point, occurrence, exception): the key file's write comes first, the state's second
CREATE_FAULTS = [("create:key_written", 1, "injected"), ("write:tmp_written", 2, "injected"),
                 ("write:tmp_fsynced", 2, "injected"), ("write:tmp_fsynced", 2, "ENOSPC"),
                 ("write:renamed", 2, "injected"), ("write:tmp_written", 1, "ENOSPC")]


@pytest.mark.parametrize("point,occurrence,kind", CREATE_FAULTS)
def test_a_fault_in_the_creating_write_leaves_the_certified_state_or_nothing(tmp_path, monkeypatch, point,
                                                                             occurrence, kind):
    """A certified create interrupted anywhere in its writes (an exception, not a kill): either
    the certified state exists (the fault came after it was published) or nothing does."""
    import errno

    from gtm_core.errors import StateError

    class Injected(Exception):
        pass

    hits = []

    def hook(name):
        hits.append(name)
        if name == point and hits.count(name) == occurrence:
            raise Injected(name) if kind == "injected" else OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(S, "fault_hook", hook)
    p = tmp_path / "s"
    with pytest.raises(Injected if kind == "injected" else StateError):
        Deployment.create(p, CONFIG, seed=1, certificate=_record(CONFIG.digest()))
    assert hits.count(point) == occurrence
    monkeypatch.setattr(S, "fault_hook", None)
    names = sorted(os.listdir(tmp_path))
    if point == "write:renamed":  # the state was published before the fault: it is certified
        assert names == ["s", "s.key", "s.lock"], names
        assert S.read_certificate(p) == _record(CONFIG.digest())
        return
    assert names == ["s.lock"], names
    with Deployment.create(p, CONFIG, seed=1, certificate=_record(CONFIG.digest())) as dep:
        assert dep.generation == 1
    assert S.read_certificate(p) == _record(CONFIG.digest())


def test_a_state_with_a_duplicate_key_is_refused(tmp_path):
    """A duplicate key in the body, its first copy forged: a last-key-wins reader (json.loads) saw the
    genuine value, so the digest and the HMAC held, while a human or another parser saw the forgery."""
    import json
    import re

    path = tmp_path / "d.state"
    Deployment.create(path, CONFIG, seed=1).close()
    text = path.read_text()
    first = next(iter(json.loads(text)["body"]))
    forged, n = re.subn(r'("body"\s*:\s*\{)', r'\1' + json.dumps(first) + ': "forged", ', text, count=1)
    assert n == 1 and json.loads(forged)["body"] == json.loads(text)["body"]  # last key wins: the genuine body
    path.write_text(forged)
    os.chmod(path, 0o600)
    with pytest.raises(S.StateError, match="corrupted"):
        Deployment.open(path)
    assert path.read_text() == forged  # refused, left untouched

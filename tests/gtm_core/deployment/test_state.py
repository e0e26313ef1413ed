"""State file details: only a deployment's own temporaries are swept; the state's size
does not depend on the secret."""

import os
from pathlib import Path

from gtm_core import GTMConfig
from gtm_core.deployment import Deployment
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
    return S.certificate_record(certificate_sha256="a" * 64, config_sha256=config_sha256, horizon=3, key_id="b" * 64)


def test_a_state_without_a_certificate_opens_as_uncertified(tmp_path):
    """Every state written before certificates were bound has no such field; it loads unchanged."""
    p = tmp_path / "s"
    Deployment.create(p, CONFIG, seed=1).close()
    assert "certificate" not in S.read_state_body_unchecked(p)
    with Deployment.open(p) as dep:
        assert dep.steps_done == 0
    assert S.read_certificate(p) is None


def test_bind_certificate_is_authenticated_kept_and_only_at_creation(tmp_path):
    import pytest
    from gtm_core.errors import StateError
    from gtm_core.evaluation import BernoulliMechanism
    from gtm_core.reference import default_rng

    p = tmp_path / "s"
    with Deployment.create(p, CONFIG, seed=1) as dep:
        with pytest.raises(StateError, match="another configuration"):
            S.bind_certificate(p, None, _record("c" * 64))
        assert S.bind_certificate(p, None, _record(CONFIG.digest())) == 2
        with pytest.raises(StateError, match="only at creation"):
            S.bind_certificate(p, None, _record(CONFIG.digest()))
    with Deployment.open(p) as dep:
        assert dep.generation == 2
        dep.step(BernoulliMechanism(0.0, default_rng(1)[0]))
    assert S.read_certificate(p) == _record(CONFIG.digest())  # kept by the step's writes


def test_a_certificate_record_for_another_configuration_is_inconsistent():
    import pytest
    from gtm_core.errors import StateError

    with pytest.raises(StateError, match="another configuration"):
        S.check_certificate_record(_record("c" * 64), "d" * 64, "'x'")
    with pytest.raises(StateError, match="malformed"):
        S.check_certificate_record({**_record("d" * 64), "horizon": 0}, "d" * 64, "'x'")

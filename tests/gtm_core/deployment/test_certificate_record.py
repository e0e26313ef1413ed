"""The certificate record a deployment's state keeps (gtm_core.deployment.certificate_record)."""

import pytest

from gtm_core.deployment import certificate_record as CR
from gtm_core.errors import StateError


def _record(config_sha256: str) -> dict:
    return CR.certificate_record(certificate_sha256="a" * 64, config_sha256=config_sha256, horizon=3,
                                 key_id="b" * 64)


def test_a_certificate_record_for_another_configuration_is_inconsistent():
    with pytest.raises(StateError, match="another configuration"):
        CR.check_certificate_record(_record("c" * 64), "d" * 64, "'x'")
    with pytest.raises(StateError, match="malformed"):
        CR.check_certificate_record({**_record("d" * 64), "horizon": 0}, "d" * 64, "'x'")


@pytest.mark.parametrize("change", [
    {"verdict": "refused"}, {"horizon": True}, {"key_id": "A" * 64}, {"certificate_sha256": "a" * 63},
    {"extra": 1},
])
def test_every_malformed_record_is_refused(change):
    record = {**_record("d" * 64), **change}
    assert not CR.is_certificate_record(record)
    with pytest.raises(StateError, match="malformed"):
        CR.check_certificate_record(record, "d" * 64, "'x'")


def test_a_record_is_copied_out_of_the_body():
    body = {CR.CERTIFICATE_FIELD: _record("d" * 64)}
    got = CR.certificate_of(body)
    assert got == body[CR.CERTIFICATE_FIELD] and got is not body[CR.CERTIFICATE_FIELD]
    assert CR.certificate_of({}) is None

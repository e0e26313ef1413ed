"""The record of the signed certificate a deployment was released under, as the state's
authenticated body keeps it (see :mod:`gtm_core.deployment` for the binding it provides)."""

from __future__ import annotations

import re

from ..errors import StateError
from ..validation import is_integer

CERTIFICATE_FIELD = "certificate"
CERTIFICATE_RECORD_KEYS = frozenset({"certificate_sha256", "config_sha256", "horizon", "key_id", "verdict"})


def certificate_record(*, certificate_sha256: str, config_sha256: str, horizon: int, key_id: str) -> dict:
    """What the state's authenticated body keeps of the signed certificate a deployment was
    released under: the certificate's SHA-256, the full configuration digest and horizon it
    vouches for, and the signing key's id."""
    record = {"certificate_sha256": certificate_sha256, "config_sha256": config_sha256, "horizon": horizon,
              "key_id": key_id, "verdict": "certified"}
    check_certificate_record(record, config_sha256, "(new)")
    return record


def is_certificate_record(record) -> bool:
    """The shape of a certificate record: its keys, three lowercase hex SHA-256 digests, a positive
    integer horizon and the verdict ``certified``."""
    hexdigest = re.compile(r"[0-9a-f]{64}")
    return (isinstance(record, dict) and set(record) == CERTIFICATE_RECORD_KEYS
            and all(isinstance(record[k], str) and hexdigest.fullmatch(record[k]) is not None
                    for k in ("certificate_sha256", "config_sha256", "key_id"))
            and is_integer(record["horizon"]) and record["horizon"] >= 1 and record["verdict"] == "certified")


def check_certificate_record(record, config_sha256: str, where: str) -> None:
    """A certificate record is well formed and vouches for exactly ``config_sha256``."""
    if not is_certificate_record(record):
        raise StateError(f"state file {where} is inconsistent: malformed certificate record")
    if record["config_sha256"] != config_sha256:
        raise StateError(f"state file {where} is inconsistent: its certificate vouches for another configuration")


def certificate_of(body: dict) -> dict | None:
    """The certificate record of an authenticated body, or None (an uncertified deployment, and
    every state written before certificates were bound)."""
    record = body.get(CERTIFICATE_FIELD)
    return None if record is None else dict(record)

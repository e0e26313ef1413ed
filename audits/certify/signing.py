"""Ed25519 signatures for certificates (through the ``cryptography`` library).

A signed certificate carries, next to its body and the body's SHA-256, a ``signature`` object::

    {"algorithm": "ed25519", "key_id": "<sha256 of the raw public key, hex>", "value": "<base64>"}

The signed message is ``SIGNED_CONTEXT + canonical body bytes``: the domain-separation prefix keeps
a certificate signature from being valid for any other kind of message signed with the same key.
Verification uses **only the public key the verifier supplies** (``--public-key``); the ``key_id``
in the document merely helps pick the right key and is checked to match it. Keys are PEM files:
the private key PKCS#8 (written 0600), the public key SubjectPublicKeyInfo; ``openssl genpkey
-algorithm ed25519`` keys work too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from gtm_core.errors import KeyFileError
from gtm_core.files import write_atomic
from gtm_core.inputs import read_text_file

ALGORITHM = "ed25519"
SIGNED_CONTEXT = b"gtm-certificate/1 signature\n"


def raw_public_bytes(public_key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of an Ed25519 public key."""
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_key: Ed25519PublicKey) -> str:
    """SHA-256 (hex) of the raw public key: how a certificate names the key that signed it."""
    return hashlib.sha256(raw_public_bytes(public_key)).hexdigest()


def generate_keypair(private_path, public_path=None) -> tuple[Path, Path]:
    """Write a new Ed25519 key pair: ``private_path`` (PKCS#8 PEM, 0600) and ``public_path``
    (default ``private_path + '.pub'``). Refuses to overwrite either file."""
    private_path = Path(private_path)
    public_path = Path(public_path) if public_path is not None else Path(str(private_path) + ".pub")
    if private_path.resolve() == public_path.resolve():
        raise KeyFileError("the private and public key paths must differ")
    for p in (private_path, public_path):
        if os.path.lexists(p):
            raise KeyFileError(f"key file {str(p)!r} already exists (refusing to overwrite a key)")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        write_atomic(private_path, pem, mode=0o600, exclusive=True)
        write_atomic(public_path, pub, mode=0o644, exclusive=True)
    except FileExistsError as exc:
        raise KeyFileError(f"key file {exc.filename!r} already exists (refusing to overwrite a key)") from None
    except OSError as exc:
        raise KeyFileError(f"cannot write key file: {exc.strerror or exc}") from None
    return private_path, public_path


def load_private_key(path) -> Ed25519PrivateKey:
    """An Ed25519 private key from a PEM file that only its owner can read."""
    text = read_text_file(path, what="private key", max_bytes=64 * 1024, error=KeyFileError)
    mode = os.stat(path).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"private key {str(path)!r} is readable by others (mode {oct(mode & 0o777)}); chmod 600 it")
    try:
        key = serialization.load_pem_private_key(text.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        raise KeyFileError(f"{str(path)!r} is not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{str(path)!r} is not an Ed25519 private key")
    return key


def load_public_key(path) -> Ed25519PublicKey:
    """An Ed25519 public key from a PEM file."""
    text = read_text_file(path, what="public key", max_bytes=64 * 1024, error=KeyFileError)
    try:
        key = serialization.load_pem_public_key(text.encode("ascii"))
    except (ValueError, TypeError, UnicodeEncodeError):
        raise KeyFileError(f"{str(path)!r} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{str(path)!r} is not an Ed25519 public key")
    return key


def sign(canonical_body: bytes, private_key: Ed25519PrivateKey) -> dict:
    """The ``signature`` object for a certificate whose canonical body bytes are given."""
    value = private_key.sign(SIGNED_CONTEXT + canonical_body)
    return {"algorithm": ALGORITHM, "key_id": key_id(private_key.public_key()),
            "value": base64.b64encode(value).decode("ascii")}


def signature_problem(canonical_body: bytes, signature, public_key: Ed25519PublicKey) -> str | None:
    """None if ``signature`` is a valid signature of the body by ``public_key``, else why not."""
    if not isinstance(signature, dict) or set(signature) != {"algorithm", "key_id", "value"}:
        return "the signature object is malformed"
    if signature["algorithm"] != ALGORITHM:
        return f"unsupported signature algorithm {signature['algorithm']!r}"
    if signature["key_id"] != key_id(public_key):
        return "the certificate was signed by a different key than the one given"
    value = signature["value"]
    if not isinstance(value, str):
        return "the signature value is not a string"
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return "the signature value is not base64"
    try:
        public_key.verify(raw, SIGNED_CONTEXT + canonical_body)
    except InvalidSignature:
        return "the signature does not match the certificate body"
    return None

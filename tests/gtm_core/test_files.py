"""gtm_core.files: the one atomic writer and the one JSON conversion."""

import json
import math
import os
import stat

import numpy as np
import pytest

from gtm_core.files import jsonable, write_atomic


def test_write_atomic_text_and_bytes(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, "héllo\n")
    assert target.read_bytes() == "héllo\n".encode()
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary left


def test_write_atomic_modes(tmp_path):
    umask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "public", "x")
        write_atomic(tmp_path / "secret", "x", mode=0o600)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "public").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "secret").st_mode) == 0o600


def test_write_atomic_exclusive_refuses_an_existing_file(tmp_path):
    target = tmp_path / "state"
    write_atomic(target, "old", exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomic(target, "new", exclusive=True)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state"]


def test_a_crash_before_the_rename_keeps_the_old_file(tmp_path):
    target = tmp_path / "state"
    write_atomic(target, "old")
    points = []

    def hook(point):
        points.append(point)
        if point == "write:tmp_fsynced":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new", hook=hook)
    assert target.read_text() == "old" and points == ["write:tmp_written", "write:tmp_fsynced"]
    assert [p.name for p in tmp_path.iterdir()] == ["state"]
    seen = []
    write_atomic(target, "new", hook=seen.append)
    assert seen == ["write:tmp_written", "write:tmp_fsynced", "write:renamed", "write:dir_fsynced"]
    assert target.read_text() == "new"


def _old_cli_jsonable(obj):  # the earlier CLI JSON conversion, pinned
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
    if isinstance(obj, dict):
        return {str(k): _old_cli_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_old_cli_jsonable(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        return _old_cli_jsonable(obj.item())
    return obj


def test_jsonable_matches_the_cli_copy_byte_for_byte():
    sample = {
        "a": [1, 2.5, math.inf, -math.inf, math.nan, None, True, "s"],
        1: (np.float64(0.1), np.int64(3), np.bool_(True), np.float32(2.0)),
        "nested": {"x": [np.float64(math.inf)], (1, 2): "tuple key"},
    }
    new = json.dumps(jsonable(sample), indent=2, sort_keys=True)
    old = json.dumps(_old_cli_jsonable(sample), indent=2, sort_keys=True)
    assert new == old
    assert jsonable(math.nan) == "nan" and jsonable(-math.inf) == "-inf"
    assert jsonable({"k": (1, 2)}) == {"k": [1, 2]}

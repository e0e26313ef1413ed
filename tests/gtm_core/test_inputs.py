"""Untrusted inputs: special files, huge files, deep nesting, non-finite numbers -> typed errors."""

from __future__ import annotations

import os
import time

import pytest

from gtm_core.errors import ConfigError, InvalidParameter
from gtm_core.inputs import nesting_depth_exceeds, parse_json, parse_toml, read_text_file


def test_regular_file_is_read(tmp_path):
    f = tmp_path / "a.toml"
    f.write_text("x = 1\n")
    assert read_text_file(f) == "x = 1\n"


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ConfigError, match="not a regular file"):
        read_text_file(fifo, what="configuration", error=ConfigError)
    assert time.monotonic() - start < 1


def test_devices_directories_missing_and_oversized_inputs_are_refused(tmp_path):
    with pytest.raises(InvalidParameter, match="not a regular file"):
        read_text_file("/dev/zero")
    with pytest.raises(InvalidParameter, match="is a directory"):
        read_text_file(tmp_path)
    with pytest.raises(InvalidParameter, match="not found"):
        read_text_file(tmp_path / "missing")
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(InvalidParameter, match="larger than 1000 bytes"):
        read_text_file(big, max_bytes=1000)
    bad = tmp_path / "bad"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(InvalidParameter, match="not UTF-8"):
        read_text_file(bad)
    with pytest.raises(InvalidParameter, match="non-empty file path"):
        read_text_file("")


def test_deep_nesting_is_refused_before_parsing():
    deep_json = "[" * 5000 + "]" * 5000
    deep_toml = "a = " + "[" * 5000 + "]" * 5000
    with pytest.raises(InvalidParameter, match="nests deeper than 64"):
        parse_json(deep_json)
    with pytest.raises(InvalidParameter, match="nests deeper than 64"):
        parse_toml(deep_toml)
    # brackets inside strings do not count; moderate nesting parses
    assert parse_json('{"a": "[[[[[[[[", "b": [[1]]}') == {"a": "[[[[[[[[", "b": [[1]]}
    assert not nesting_depth_exceeds("x = '[[[['\n", 2)


def test_non_finite_json_numbers_and_garbage_are_refused():
    for text in ("NaN", "[Infinity]", "{\"a\": -Infinity}", "{", "\"\\ud800"):
        with pytest.raises(InvalidParameter):
            parse_json(text)
    with pytest.raises(InvalidParameter, match="not valid TOML"):
        parse_toml("a = = 1")
    with pytest.raises(InvalidParameter, match="not UTF-8"):
        parse_json(b"\xff")

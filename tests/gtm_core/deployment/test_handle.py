"""The shared lifecycle of an open state file (gtm_core.deployment.handle)."""

import os
import pickle

import pytest

from gtm_core.deployment.handle import LockedStateHandle


class Handle(LockedStateHandle):
    def __init__(self, lock_fd, key_fd=None):
        self._lock_fd, self._key_fd = lock_fd, key_fd


def test_close_releases_both_descriptors_once(tmp_path):
    fds = [os.open(tmp_path / name, os.O_CREAT | os.O_RDWR, 0o600) for name in ("lock", "key")]
    with Handle(*fds) as h:
        assert not h.closed
    assert h.closed
    for fd in fds:  # really closed: the descriptors are gone
        with pytest.raises(OSError):
            os.fstat(fd)
    h.close()  # idempotent


def test_a_handle_is_never_pickled(tmp_path):
    h = Handle(os.open(tmp_path / "lock", os.O_CREAT | os.O_RDWR, 0o600))
    with pytest.raises(TypeError, match="a Handle cannot be pickled"):
        pickle.dumps(h)
    h.close()

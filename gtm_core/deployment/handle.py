"""An open sealed state file: the lifecycle both the deployment and the BatchToCO run share."""

from __future__ import annotations

import os


class LockedStateHandle:
    """A handle that holds a state file's lock (``_lock_fd``) and, once read, its key file
    (``_key_fd``) open until :meth:`close`; a context manager; never pickled (it holds a secret
    and a lock). Subclasses set both attributes in their constructors."""

    def close(self) -> None:
        """Release the key and the lock. The state on disk is always up to date; closing writes
        nothing."""
        for name in ("_key_fd", "_lock_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    @property
    def closed(self) -> bool:
        return getattr(self, "_lock_fd", None) is None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __reduce__(self):
        raise TypeError(f"a {type(self).__name__} cannot be pickled (it holds a secret and a lock)")

"""Typed errors of BatchToCO (all in the ``GTMError`` tree, messages name field and value)."""

from __future__ import annotations

from ..errors import InvalidParameter


class StreamError(InvalidParameter):
    """An insertion stream is empty, deletes or re-inserts, or names an unknown vertex."""

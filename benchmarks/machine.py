"""Machine information recorded next to every benchmark figure."""

from __future__ import annotations

import os
import platform
import sys
from datetime import datetime, timezone


def machine_info() -> dict:
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        import numpy

        info["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover - numpy is a hard dependency
        pass
    try:
        with open("/proc/loadavg") as fh:
            info["loadavg"] = fh.read().split()[:3]
    except OSError:
        pass
    return info

"""``python -m audits.cli``: the `gtm` command line."""

from . import main

main()

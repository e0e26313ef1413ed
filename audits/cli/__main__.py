"""``python -m audits.cli``: the `gtm` command line."""

from . import main

if __name__ == "__main__":  # not when Dask's worker processes re-import the main module
    main()

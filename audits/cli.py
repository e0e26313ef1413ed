"""The `gtm` command line (DESIGN.md contract).

Exit codes: 0 success, 1 a check failed / a violation was found, 2 bad usage or
bad input (one line on stderr, no traceback, no partial output).
Each verb lives in its own module ``audits/cmd_<verb>.py`` and is registered here.
"""

from __future__ import annotations

import importlib
import sys

import click

from gtm_core import __version__

from .cli_common import EXIT_USAGE

# verb modules; each defines a click command named `command`
_VERBS = ["plan", "prove", "exact", "audit", "certify", "bench", "deploy", "tune"]


class _Group(click.Group):
    def main(self, *args, **kwargs):  # usage errors: one line, exit 2
        kwargs.setdefault("standalone_mode", True)
        try:
            return super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.exceptions.Abort:
            click.echo("gtm: error: aborted", err=True)
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            if isinstance(exc, click.UsageError):
                click.echo(f"gtm: error: {exc.format_message().splitlines()[0]}", err=True)
                sys.exit(EXIT_USAGE)
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gtm")
def cli():
    """gtm - a formally cross-checked verification suite for the Generalized Thresholding Mechanism."""


for _verb in _VERBS:
    try:
        _mod = importlib.import_module(f"audits.cmd_{_verb}")
    except ModuleNotFoundError as _exc:  # a verb not built yet is simply absent
        if _exc.name != f"audits.cmd_{_verb}":
            raise
        continue
    cli.add_command(_mod.command, name=_verb)


def main(argv=None):
    result = cli.main(args=argv, prog_name="gtm")
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    main()

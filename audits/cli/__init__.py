"""The `gtm` command line (the contract: docs/cli.md).

Exit codes: 0 success, 1 a check failed / a violation was found, 2 bad usage or
bad input (one line on stderr, no traceback, no partial output).
Each verb lives in its own module ``audits/cli/<verb>.py`` (a click command named ``command``) and
is registered here from a static list. ``python -m audits.cli`` and the console script
``gtm = "audits.cli:main"`` both run :func:`main`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gtm_core import __version__

from . import audit, bench, blackbox, certify, co, deploy, exact, opendp, plan, prove, tune
from .common import EXIT_USAGE

VERBS = {"plan": plan, "prove": prove, "exact": exact, "audit": audit, "certify": certify, "bench": bench,
         "deploy": deploy, "co": co, "blackbox": blackbox, "tune": tune, "opendp": opendp}


# where the running code lives: an (editable) source checkout, or a copy in site-packages
_ROOT = Path(__file__).resolve().parents[2]
_WHERE = f"{_ROOT} ({'source checkout' if (_ROOT / 'pyproject.toml').is_file() else 'installed copy'})"


class _Group(click.Group):
    def main(self, *args, **kwargs):  # usage errors: one line, exit 2
        kwargs.setdefault("standalone_mode", True)
        argv = kwargs.get("args", args[0] if args else None)
        if not (sys.argv[1:] if argv is None else list(argv)):  # bare `gtm`: the help, exit 0
            with click.Context(self, info_name=kwargs.get("prog_name") or "gtm") as ctx:
                click.echo(self.get_help(ctx))
            sys.exit(0)
        standalone = kwargs["standalone_mode"]
        try:
            result = super().main(*args, **{**kwargs, "standalone_mode": False})
            # click returns a raised Exit's code without standalone mode: exit with it, so that an
            # in-process caller (CliRunner, a test) sees the same exit code as the shell
            if standalone and isinstance(result, int) and result != 0:
                sys.exit(result)
            return result
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
@click.version_option(__version__, prog_name="gtm", message="%(prog)s %(version)s from " + _WHERE.replace("%", "%%"))
def cli():
    """gtm - a formally cross-checked verification suite for the Generalized Thresholding Mechanism."""


for _name, _module in VERBS.items():
    cli.add_command(_module.command, name=_name)


def main(argv=None):
    result = cli.main(args=argv, prog_name="gtm")
    sys.exit(result if isinstance(result, int) else 0)

"""An optional external generation check: the documented defence against rolling a state file back.

A rolled-back state (an older copy of the file, validly authenticated) would resume at an earlier
step and re-run later steps with fresh noise; nothing inside the state can detect it. An external
log can: the operator gives ``gtm deploy step`` a command (``--generation-check CMD``), which is run

* ``CMD check DEPLOYMENT_ID GENERATION`` after the state is opened and **before any step**: exit 0
  accepts, anything else refuses (nothing is stepped; the command's last stderr line is quoted);
* ``CMD record DEPLOYMENT_ID GENERATION+1`` **before every step** (write-ahead, :meth:`GenerationCheck.reserve`,
  called by :meth:`~gtm_core.deployment.Deployment.step` through ``before_write_ahead``: after the
  step's command was started and its noise drawn, right before the step's own write-ahead record):
  from then on the log no longer accepts the state the step starts from, so a copy of that state
  restored after the step committed is refused even if the record after the commit never happens
  (a log outage, or ``gtm`` killed between the commit and the record). A reservation that fails
  refuses the step (nothing stepped) and is undone by recording GENERATION again;
* ``CMD record DEPLOYMENT_ID GENERATION`` after every committed step and after the run (also after
  a failure), so the log follows the state.

The window that cannot be closed from outside the state: between the reservation and the step's
first write, and between the commit and its record, the log and the state disagree; ``check`` then
refuses (fail closed) - the deployment needs its operator (``gtm deploy status`` shows the state's
generation) rather than accepting a state the log cannot vouch for.

The command runs through :class:`gtm_core.processes.ProcessGroup` (own process group, bounded wait,
whole tree killed). ``examples/generation_check.sh`` keeps an append-only log file; see
docs/deployment.md for what it does and does not defend.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import StateError
from ..processes import Command, ProcessClosed, ProcessGroup, resolve_command

ACTIONS = ("check", "record")
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class GenerationCheck:
    """A resolved ``--generation-check`` command (resolved at construction: a missing program is
    an :class:`~gtm_core.errors.InvalidParameter` before anything is opened or stepped)."""

    command: Command
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_text(cls, text, *, timeout: float = DEFAULT_TIMEOUT) -> "GenerationCheck":
        return cls(resolve_command(text, field="--generation-check"), timeout)

    def reserve(self, deployment_id: str, generation: int) -> None:
        """Write-ahead record before a step from ``generation``: record ``generation + 1`` so that
        the log refuses the pre-step state from now on. If the record fails, try to record
        ``generation`` again (undo) and raise StateError: the step must not run."""
        try:
            self.run("record", deployment_id, generation + 1)
        except StateError as exc:
            try:
                self.run("record", deployment_id, generation)
            except StateError:
                pass
            raise StateError(f"{exc}; the write-ahead record before the step failed, nothing was stepped") from None

    def run(self, action: str, deployment_id: str, generation: int) -> None:
        """Run ``CMD action ID GENERATION``; StateError unless it exits 0 within the timeout."""
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}")
        argv = (*self.command.argv, action, deployment_id, str(generation))
        cmd = Command(argv, f"{self.command.text} {action} {deployment_id} {generation}")
        try:
            group = ProcessGroup(cmd, stdin=False)
        except ProcessClosed as exc:
            raise StateError(f"generation check: {exc}") from None
        try:
            code = group.wait(time.monotonic() + self.timeout)
        finally:
            group.kill()
        tail = group.stderr_tail()
        if code is None:
            raise StateError(f"generation check ({action}) did not answer within {self.timeout:g} s")
        if code != 0:
            why = f": {tail}" if tail else ""
            if action == "check":
                raise StateError(
                    f"generation check refused generation {generation} of deployment {deployment_id} "
                    f"(exit {code}){why}; a rolled-back state? nothing was stepped")
            raise StateError(f"generation check could not record generation {generation} (exit {code}){why}")

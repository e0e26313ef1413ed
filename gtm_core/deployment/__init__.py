"""A persisted, crash-safe GTM deployment.

A GTM deployment runs for a long time (continual observation, hyperparameter search). Its
shared noise eta_1 must be drawn **once**: a process that restarts and draws a fresh eta_1
silently spends the privacy budget again, and a step that is re-run with fresh noise after its
mechanism was evaluated is a second, unaccounted draw of the randomness the proof charges for
once. :class:`Deployment` keeps everything that must survive a restart in one file the user
names, and runs Algorithm 1's steps under a write-ahead protocol so that no crash can cause
either of these.

State file
----------
One JSON document (the *state*), holding: the configuration and its SHA-256, the plan's global
parameters (tau_1, mu_1, epsilon, parameterisation) as a plan identity, **eta_1** (the only
secret, as its drawn bits; see below), the number of committed steps, the status (``running``, ``halted``,
``failed``) with the failure (step, kind, reason), the *pending* step (write-ahead record), the
public transcript (run-length encoded: it is ``continue`` until the single ``halt``, so it has
constant size), the total number of mechanism evaluations (sensitive), the seeded flag, a
generation counter, a random public ``deployment_id``, timestamps and, for a deployment released
under a signed certificate, that certificate's record (``certificate``: its SHA-256, the full
configuration digest and horizon it vouches for, the signing key's id; absent in an uncertified
deployment and in every state written before certificates were bound).

It is written atomically: a temporary file in the same directory (mode 0600), written, fsync'ed,
renamed over the old state (``os.replace``; the first write uses ``os.link`` so that an existing
state is never overwritten), then the directory is fsync'ed. A reader therefore sees either the
old or the new state, never a mixture, also after a power loss.

**The state file is the secret store.** It necessarily contains eta_1 (a deployment that did
not store it could not resume without redrawing it). It is created with permissions 0600 and
:meth:`Deployment.open` refuses a state file or key file that is readable by group or others
(eta_1 may have leaked; retire the deployment or, if you are sure it did not, ``chmod 600``).
Nothing else in the package prints, logs or returns eta_1, eta_{2,t}, N_t or K_t.

Integrity and threat model
--------------------------
The state carries a SHA-256 of its canonical JSON body and an HMAC-SHA256 of the same bytes,
keyed by 32 random bytes from the operating system stored in a separate *key file*
(``STATE.key`` by default, 0600, or a path of your choice, e.g. on another volume).

* Detected: torn or partial writes, truncation, bit flips, a file that is not a state at all
  (SHA-256 mismatch: "corrupted"); edits by anyone who cannot read the key file, and a state
  file swapped in from *another* deployment (HMAC mismatch: "tampered or wrong key"). Both are
  refused with :class:`StateError`; a refused state is never re-initialised.
* Defended (each by a test, see docs/deployment.md "Threat model"): crashes at any point of a step
  (write-ahead protocol, ``test_crash.py``); two processes on one deployment, also through a
  symlink and also after ``STATE.lock`` was deleted (paths resolved once with ``realpath``; the
  lock file **and the key file** - written once, never replaced - are flocked; ``test_locking.py``);
  a symlinked state replaced by a regular file (writes go to the real file); sweeping another
  deployment's temporaries (only ``.NAME.<8 random>.tmp`` exactly; ``test_state.py``); a size side
  channel (no ``state_bytes`` in the status, eta_1's bits at fixed width; ``test_state.py``);
  mechanism process trees outliving a timeout, Ctrl-C or ``gtm`` (:class:`CommandMechanism`
  through :class:`gtm_core.processes.ProcessGroup`; ``test_mechanisms.py``); a commit that cannot
  be written (``state_write_failed``); a *rollback* of the state to an earlier copy of itself,
  **only** with an external generation check (:mod:`.generation`, ``--generation-check``) whose log
  the rollback cannot also roll back (a write-ahead record before every step, so a record lost
  after a commit does not let the pre-step copy back in); a deployment released under a
  certificate for another configuration (``gtm deploy init --certificate``: the certificate's
  record is kept in the authenticated body, written with the state's first write by
  ``Deployment.create(..., certificate=record)``, so the certified state exists or nothing does); ``gtm deploy
  status`` on a read-only file system (:func:`.state.read_only_status`).
* Not defended: an attacker who can read the key file (they can forge any state) or the state
  file (it holds eta_1); a rollback without a generation check (validly authenticated: it would
  resume at an earlier step and re-run later steps with fresh noise - do not restore state files
  from backups); the state file's size seen by ``stat`` (independent of eta_1 but growing with the
  digits of the sensitive evaluation total); root or a debugger; a Python callable that ignores
  its time limit (abandoned, not killed); mechanism faults that depend on the data.

Concurrency: an open deployment holds an exclusive ``flock`` on ``STATE.lock`` and on the key
file of the real (link-resolved) paths; a second process (or a second :meth:`Deployment.open` in
the same process) is refused. The kernel releases the locks when the holder dies, so a crash
never leaves the deployment locked.

Step protocol (write-ahead) and why a crash mid-step fails the deployment
------------------------------------------------------------------------
Step t runs as (:meth:`Deployment.step`)::

    0. start a CommandMechanism's command                  (its program executed, no output read)
       it cannot start?  -> InvalidParameter, nothing drawn or written, deployment unchanged
    1. plan step t; draw eta_{2,t} and N_t                (GTM.begin_step: noise only, nothing written)
       N_t > evaluation budget?  -> write status=failed(evaluation_budget_exceeded); stop
    2. write state with pending_step = t, eta_1's bits     (durable before any mechanism output is read)
    3. evaluate: read N_t outputs, count K_t               (GTM.finish_step: the only data-dependent phase)
    4. decide a_t; write state with steps_done = t, transcript += a_t, pending_step = none
    5. return a_t to the caller                            (only after it is durable)

A step that ends in 1 or 2 kills the started command unread; a Python callable is first called in 3.

A crash (SIGKILL, power loss) is handled on the next :meth:`Deployment.open`:

* before 2 is durable: the old state is intact, no output of the mechanism was read (a started
  command dies with its process group), nothing was released; step t runs again later with fresh
  eta_{2,t}, N_t. Discarding noise that never met the data costs no privacy.
* after 2 and before 4 is durable: the state says ``pending_step = t``. The mechanism may have
  been evaluated (we cannot know how far it got), so the deployment enters its terminal
  *failed* state (kind ``crashed_during_step``) and step t is never run again.
* after 4: the step is committed, exactly once.

Why not replay step t (with the same recorded noise or with fresh noise)? The privacy proof
charges for *one* evaluation of step t: one K_t ~ Bin(N_t, p_t) turned into one bit. If a crash
can trigger a re-evaluation, whoever can cause or time crashes (a mechanism that crashes on some
inputs, an operator who kills the process when a side channel suggests "halt", an OOM killer)
gets several independent K_t's on the same data and keeps the outcome they like: repeated until
success this leaks p_t without bound, with fresh noise or with the same recorded noise alike.
Failing the deployment caps every step at one evaluation; the price is availability: a crash
mid-step ends the deployment (the operator starts a new one, which is a new, separately
accounted privacy expense). The same argument makes every mechanism fault terminal:

Mechanism faults
----------------
A mechanism that raises, returns something other than +1/-1 (or a bool), or exceeds the step's
time limit puts the deployment into its terminal failed state (kinds ``mechanism_error``,
``mechanism_timeout``), recorded in the state file before the error reaches the caller. An
interruption of the evaluation (KeyboardInterrupt, SystemExit) fails it too (``interrupted``).
Retrying the step would re-evaluate the mechanism on the same data (see above). The evaluation
budget of Lemma 22 (N_t > ``StepPlan.evaluation_budget``) is enforced in phase 1, before any
evaluation (kind ``evaluation_budget_exceeded``); its probability is the one the planner reports,
``StepPlan.budget_exceed_probability``. The bit "failed at step t" is itself released; it is
covered by the guarantee only if faults do not depend on the data (a mechanism whose failures
depend on the data leaks through them, as in any DP system).

A Python callable cannot be forcibly stopped: with a time limit it runs in a daemon thread,
and on timeout the deployment is failed and the thread abandoned (its results are ignored).
:class:`CommandMechanism` runs the mechanism as a command in its own process group and kills its
whole tree on timeout, error, Ctrl-C and when ``gtm`` dies; a program that does not exist is
refused when the mechanism is constructed, and one that cannot be executed (a missing ``#!``
interpreter, not an executable format) when the step starts it, before the step's draw and
write-ahead record (the deployment is unchanged). Failure messages never quote N_t, K_t or the
mechanism's own exception text (which may quote them).

Exact sampling (state version 2)
--------------------------------
Every random quantity of a step - eta_1, eta_{2,t}, N_t and purification's flips - is drawn
exactly from random bits (:mod:`gtm_core.exact_sampling`; no float decides an outcome). eta_1 is
a lazily refined random real: the state stores its drawn bits (``secret.eta1_bits``, a
fixed-width hex string, so the file size does not reveal how many bits were drawn). A step that
needs more bits of eta_1 appends to them in phase 1, and they are persisted by the write-ahead
record (phase 2) before the mechanism runs; bits lost in a crash before phase 2 never met the
data, and drawing them afresh leaves the joint law unchanged (they are uniform given the
stored prefix). The stored prefix is never redrawn. A version-1 state (eta_1 drawn by the
float64 sampler) is refused: it cannot be made exact after the fact. See docs/deployment.md.

Randomness
----------
Without a seed every bit comes from the operating system's CSPRNG (``SystemBits``). A
caller-supplied numpy generator or seed (bits from it: reproducible) marks the deployment
``seeded`` (sticky: the flag is stored and stays set for the life of the deployment), and every
output (``repr``, status, JSON, CLI) then carries :data:`NOT_FOR_DEPLOYMENT`.

Where things live
-----------------
:mod:`.state` (state and key files: format, sealing, validation, durable writes, the locks and
link resolution - shared with BatchToCO's ``gtm co run --state`` - and the public status),
:mod:`.mechanisms` (time-limited evaluation, :class:`CommandMechanism`), :mod:`.generation`
(the external rollback check), :mod:`.runner`
(:class:`Deployment`, the step protocol).
"""

from ..errors import MechanismTimeout
from ..reference import NOT_FOR_DEPLOYMENT
from .generation import GenerationCheck
from .mechanisms import MAX_TIME_LIMIT, CommandMechanism, check_time_limit
from .runner import Deployment
from .body import FAILURE_KINDS
from .state import STATE_FORMAT, STATE_VERSION

__all__ = [
    "Deployment",
    "CommandMechanism",
    "GenerationCheck",
    "MechanismTimeout",
    "check_time_limit",
    "MAX_TIME_LIMIT",
    "FAILURE_KINDS",
    "NOT_FOR_DEPLOYMENT",
    "STATE_FORMAT",
    "STATE_VERSION",
]

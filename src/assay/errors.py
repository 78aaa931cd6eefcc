"""The one exception tree of assay.

Two families: *usage errors* (the user's input is wrong: a suite that does not load, an
agent that is not installed) which stop a command before anything is written, and *trial
errors* (the machinery broke while running one attempt: sandbox, gateway, adapter,
verifier) which become an ``infra_error`` end state with a classified reason. The CLI maps
each family to a documented exit code in one place (:data:`EXIT_CODES`).
"""

from __future__ import annotations

from dataclasses import dataclass


class AssayError(Exception):
    """Base of every error assay raises on purpose."""

    exit_code: int = 1


# ----------------------------------------------------------------------------- usage errors
class UsageError(AssayError):
    """The user's input cannot be used; nothing has been written."""

    exit_code = 2


@dataclass
class SpecProblem:
    """One thing wrong with a spec file: where, which field, what is wrong, how to fix it."""

    file: str
    field: str
    message: str
    fix: str = ""

    def render(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        text = f"{where}: {self.message}"
        if self.fix:
            text += f" (fix: {self.fix})"
        return text


class SpecError(UsageError):
    """A suite, task or manifest file does not load; carries every problem found."""

    def __init__(self, problems: list[SpecProblem]):
        self.problems = problems
        super().__init__("\n".join(p.render() for p in problems))


class AgentUnavailable(UsageError):
    """An agent named for a run cannot be found or started: refused before the run."""


class RunDirError(UsageError):
    """A run directory is missing, not a run directory, or cannot be resumed as asked."""


class IntegrityError(AssayError):
    """Evidence in a run directory changed after it was written."""

    exit_code = 3


# ----------------------------------------------------------------------------- verdicts
class Verdict(AssayError):
    """The command ran and its output is printed; its answer is not "ok". Raised last, so the CLI
    turns it into the documented exit code (the message is one line on stderr)."""

    label = "FAILED"


class GateFailed(Verdict):
    """The answer is no: a --fail-if threshold or the security gate tripped, a regression."""

    exit_code = 1


class InfraRateExceeded(Verdict):
    """More infrastructure errors than --max-infra-rate allows: the run measured the machinery."""

    exit_code = 4
    label = "INFRA"


class NothingToCompare(Verdict):
    """Nothing ran, nothing was scored, or two runs share nothing to compare: never a pass."""

    exit_code = 5
    label = "NOTHING COMPARED"


class RunBudgetReached(Verdict):
    """The run-wide budget stopped the run with trials still pending: the run is incomplete (never
    a pass); ``assay run --resume RUN --max-cost HIGHER`` continues it."""

    exit_code = 6
    label = "INCOMPLETE"


# ----------------------------------------------------------------------------- trial errors
class TrialError(AssayError):
    """The machinery broke during one attempt. ``reason`` is a stable classification."""

    retryable: bool = False
    reason: str = "infra"

    def __init__(self, message: str, *, reason: str | None = None, retryable: bool | None = None):
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        if retryable is not None:
            self.retryable = retryable


class SandboxError(TrialError):
    reason = "sandbox"


class GatewayError(TrialError):
    reason = "gateway"


class AdapterError(TrialError):
    reason = "agent_adapter"


class VerifierError(TrialError):
    """The verifier itself crashed or timed out: the attempt is infra_error, never pass."""

    reason = "verifier"


class SetupError(TrialError):
    """The task's setup script failed: the task, not the agent, is at fault."""

    reason = "setup"


class Interrupted(TrialError):
    """The runner died while this attempt was in flight (found on resume)."""

    reason = "interrupted"
    retryable = True


#: the share of infrastructure errors above which a run measured the machinery, not the agent
#: (exit 4) unless ``--max-infra-rate`` says otherwise: fail closed, so a run whose every trial
#: broke never looks green to CI (docs/cli.md)
DEFAULT_MAX_INFRA_RATE = 0.2

#: exit codes of the CLI, documented in docs/cli.md (what produces each) and the README.
EXIT_CODES: dict[str, int] = {
    "ok": 0,
    "failed": 1,  # the command ran and its answer is "no" (gate failed, regression, invalid task)
    "usage": 2,  # bad input or usage: nothing written
    "integrity": 3,  # run directory evidence changed
    "infra": 4,  # infrastructure errors above --max-infra-rate
    "nothing": 5,  # nothing ran, nothing scored, or nothing to compare
    "budget": 6,  # the run budget stopped the run with trials pending: incomplete, resumable
    "interrupted": 130,  # interrupted; the "resume with ..." hint is printed
}

"""The one error hierarchy of the SDK (DESIGN.md contract 3.5).

Every error that can end or spoil a rollout belongs to exactly one *category*:

- ``model``   — the model's answer is unusable (empty, malformed, prompt too long for its context);
- ``infra``   — something outside the environment failed (endpoint down after retries, sandbox died,
  judge unreachable); a trainer may mask these rollouts;
- ``env``     — a bug or a fatal condition in environment code;
- ``scoring`` — a reward function or verifier failed.

A rollout that errored is kept with ``error = {category, type, message}`` and ``reward = null``; it is
never dropped and never silently scored 0.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

ErrorCategory = Literal["model", "infra", "env", "scoring"]


class VerifiersError(Exception):
    """Base class of every SDK error. ``category`` says who is to blame."""

    category: ClassVar[ErrorCategory] = "env"

    def to_record(self) -> dict[str, Any]:
        """The ``error`` field of a rollout result."""
        return {"category": self.category, "type": type(self).__name__, "message": str(self)}


# --- model -----------------------------------------------------------------------------------------
class ModelError(VerifiersError):
    category = "model"


class EmptyResponseError(ModelError):
    """The server answered but the response holds no usable choice or message."""


class InvalidResponseError(ModelError):
    """The server's response could not be decoded as an OpenAI-compatible completion."""


class OverlongPromptError(ModelError):
    """The prompt does not fit in the model's context window."""


class BadRequestError(ModelError):
    """The server refused the request as malformed (HTTP 400/404/422): check model name and arguments."""


# --- infra -----------------------------------------------------------------------------------------
class InfraError(VerifiersError):
    category = "infra"


class EndpointUnavailableError(InfraError):
    """The model endpoint could not be reached, or kept failing, after all retries."""


class AuthenticationError(InfraError):
    """The endpoint refused the API key (HTTP 401/403). Not retried."""


class RequestTimeoutError(InfraError):
    """A single request exceeded its timeout on every attempt."""


class SandboxError(InfraError):
    """A sandbox could not be created, died, or stopped answering."""


class JudgeUnavailableError(InfraError):
    """The LLM judge could not be reached after retries."""


class RolloutTimeoutError(InfraError):
    """The rollout exceeded its wall-clock budget (slow endpoint, stuck tool or sandbox)."""


# --- env -------------------------------------------------------------------------------------------
class EnvError(VerifiersError):
    category = "env"


class ToolFatalError(EnvError):
    """A tool raised an error type the environment declared fatal."""


class EnvArgumentError(EnvError, TypeError):
    """``load_environment`` or an environment constructor got an argument it does not accept."""


class EnvNotFoundError(EnvError, LookupError):
    """No installed or local environment has the requested id."""


class DatasetError(EnvError, ValueError):
    """An environment's data cannot be used as it is pinned: a source in another schema, a row count that
    differs from the one the pinned dataset has, or a missing ``datasets`` package."""


class DatasetAccessError(DatasetError):
    """A gated dataset (GPQA, HLE) that this machine's Hugging Face token may not read."""


# --- scoring ---------------------------------------------------------------------------------------
class ScoringError(VerifiersError):
    category = "scoring"


class RewardFunctionError(ScoringError):
    """A reward function raised or returned something that is not a number."""


class VerificationTimeoutError(ScoringError):
    """An answer verifier (e.g. math-verify) exceeded its hard timeout."""


def error_record(exc: BaseException) -> dict[str, Any]:
    """Turn any exception into the ``error`` field of a rollout; unknown exceptions are env errors."""
    if isinstance(exc, VerifiersError):
        return exc.to_record()
    return {"category": "env", "type": type(exc).__name__, "message": str(exc) or repr(exc)}


__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "DatasetAccessError",
    "DatasetError",
    "EmptyResponseError",
    "EndpointUnavailableError",
    "EnvArgumentError",
    "EnvError",
    "EnvNotFoundError",
    "ErrorCategory",
    "InfraError",
    "InvalidResponseError",
    "JudgeUnavailableError",
    "ModelError",
    "OverlongPromptError",
    "RequestTimeoutError",
    "RewardFunctionError",
    "RolloutTimeoutError",
    "SandboxError",
    "ScoringError",
    "ToolFatalError",
    "VerificationTimeoutError",
    "VerifiersError",
    "error_record",
]

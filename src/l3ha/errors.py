"""The one exception tree of l3ha. Pure.

Every error says whether retrying the same call may succeed (``retryable``) and
which process exit code a command should end with when it reaches the CLI.
Messages are single lines written for operators: they name the problem and,
where it helps, the candidates.
"""

from __future__ import annotations

from collections.abc import Iterable


class L3haError(Exception):
    """Base of every error l3ha raises on purpose."""

    retryable: bool = False
    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


# --- bad input: nothing was changed, exit 2 -------------------------------


class UserError(L3haError):
    """The operator asked for something that cannot be done as asked."""

    exit_code = 2


class BadInputError(UserError):
    """A malformed option, file or value."""


class NotFoundError(UserError):
    """A named agent, router or file does not exist."""


class AmbiguousError(UserError):
    """A name matches more than one object."""


def candidates_text(candidates: Iterable[str], limit: int = 10) -> str:
    """Render candidate names for a one-line error: ``a, b, c (+4 more)``."""
    items = sorted(set(candidates))
    shown = ", ".join(items[:limit])
    if len(items) > limit:
        shown += f" (+{len(items) - limit} more)"
    return shown or "none"


# --- the cloud said no, or did not answer --------------------------------


class CloudError(L3haError):
    """Talking to the cloud failed."""


class UnreachableError(CloudError):
    """The API endpoint could not be reached (connection refused, DNS, TLS, timeout)."""

    retryable = True


class AuthError(CloudError):
    """Credentials were rejected or the cloud configuration is incomplete."""

    exit_code = 2


class ConfigError(UserError):
    """The cloud configuration (clouds.yaml, OS_* variables) is missing or invalid."""


class ConflictError(CloudError):
    """Neutron answered 409: the change conflicts with the current state."""


class ApiNotFoundError(CloudError):
    """Neutron answered 404 for an object l3ha expected to exist."""


class ServerError(CloudError):
    """Neutron answered 5xx; the same call may succeed later."""

    retryable = True


class ApiTimeoutError(CloudError):
    """Neutron did not answer in time; the request's outcome is unknown."""

    retryable = True


class ReadBackError(CloudError):
    """A change was accepted but reading it back showed a different state."""


# --- safety ---------------------------------------------------------------


class SafetyHaltError(L3haError):
    """A safety gate refused to act; the message carries the reason and evidence."""

    exit_code = 3


# --- coordination (leader election) ----------------------------------------


class CoordinationError(L3haError):
    """The coordination service (etcd, redis, the lock directory) failed or is unreachable."""

    retryable = True

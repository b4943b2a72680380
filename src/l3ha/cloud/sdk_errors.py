"""Library exceptions turned into ``l3ha.errors``, and a deadline helper. I/O: threads.

openstacksdk, keystoneauth and requests raise their own exception trees;
``translate_exception`` is the one place that maps them (the status table
itself is ``l3ha.cloud.translate.error_for_status``). Only ``l3ha.cloud``
modules import these libraries.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import openstack.exceptions as sdk_exc
import requests
from keystoneauth1 import exceptions as ksa_exc

from l3ha.cloud import translate
from l3ha.errors import (
    ApiTimeoutError,
    AuthError,
    CloudError,
    ConfigError,
    L3haError,
    UnreachableError,
)


def translate_exception(exc: BaseException, where: str) -> L3haError:
    """The l3ha error for an exception raised by openstacksdk, keystoneauth or requests."""
    if isinstance(exc, L3haError):
        return exc
    text = translate.one_line(str(exc))
    if isinstance(exc, ksa_exc.ConnectTimeout | requests.exceptions.Timeout):
        return ApiTimeoutError(f"{where}: timed out ({text})")
    if isinstance(exc, ksa_exc.SSLError | requests.exceptions.SSLError):
        return UnreachableError(f"{where}: TLS failure ({translate.tls_reason(text)})")
    if isinstance(exc, ksa_exc.ConnectionError | requests.exceptions.ConnectionError):
        reason = translate.connection_reason(" ".join(str(exc).split()))
        return UnreachableError(f"{where}: cannot connect ({reason})")
    status = _http_status(exc)
    if status == 401:
        return AuthError(
            f"{where}: the credentials were rejected (HTTP 401; check the user name, "
            "password, project and domain names)"
        )
    if status is not None:
        return translate.error_for_status(status, f"{where}: {_without_status(text)}")
    if isinstance(exc, ksa_exc.EndpointNotFound):
        return ConfigError(f"{where}: no network endpoint in the service catalog ({text})")
    if isinstance(exc, ksa_exc.AuthPluginException | ksa_exc.MissingAuthMethods):
        return ConfigError(f"{where}: incomplete cloud configuration ({text})")
    if isinstance(exc, ksa_exc.AuthorizationFailure):
        return AuthError(f"{where}: authentication failed ({text})")
    if isinstance(exc, sdk_exc.ConfigException):
        return ConfigError(f"{where}: {text}")
    if isinstance(exc, ksa_exc.DiscoveryFailure):
        return UnreachableError(f"{where}: no usable Neutron API ({text})")
    if isinstance(exc, ValueError):
        return CloudError(f"{where}: unreadable answer ({text})")
    return CloudError(f"{where}: {type(exc).__name__}: {text}")


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status of a keystoneauth or SDK HTTP error, else ``None``."""
    if isinstance(exc, ksa_exc.HttpError):
        return int(exc.http_status or 0)
    if isinstance(exc, sdk_exc.HttpException):
        return int(exc.status_code or 0)
    return None


_STATUS_NOISE = re.compile(r"\s*\((?:HTTP \d+|Request-ID: [^)]*)\)")


def _without_status(text: str) -> str:
    """A library's HTTP error text without its ``(HTTP 500) (Request-ID: ...)`` parts."""
    return _STATUS_NOISE.sub("", text).strip() or "error"


def run_with_deadline(call: Callable[[], None], seconds: float) -> bool | None:
    """Run ``call`` in a daemon thread; ``True`` when it returned, ``None`` after ``seconds``.

    Its exception is re-raised here. A call still running at the deadline is
    abandoned (the daemon thread does not keep the process alive).
    """
    outcome: list[BaseException | None] = []

    def runner() -> None:
        try:
            call()
        except BaseException as exc:  # handed over to the waiting thread
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=runner, name="l3ha-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        return None
    if outcome[0] is not None:
        raise outcome[0]
    return True

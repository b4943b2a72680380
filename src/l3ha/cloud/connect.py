"""Opening a cloud and checking it answers, within a deadline. I/O: clouds.yaml, Keystone, Neutron.

openstacksdk does the configuration (clouds.yaml, ``OS_*`` variables), the
authentication and the endpoint discovery. ``open_connection`` turns the
options into an SDK connection (a bad configuration is a one-line
``ConfigError``); ``check_cloud`` authenticates and discovers the Neutron
endpoint, retried like any call, and gives up after
``CONNECT_DEADLINE_TIMEOUTS`` api timeouts so that no library hang can hang
l3ha. ``l3ha.cloud.adapter.connect`` puts both together.
"""

from __future__ import annotations

import argparse
import logging
import os
import warnings
from collections.abc import Mapping
from typing import Any

from l3ha.cloud import translate
from l3ha.cloud.config_problems import open_error, quiet_libraries, skipped_config_files
from l3ha.cloud.options import sdk_connect
from l3ha.cloud.sdk_errors import run_with_deadline, translate_exception
from l3ha.cloud.transport import NeutronApi
from l3ha.errors import AuthError, ConfigError, UnreachableError

log = logging.getLogger(__name__)

#: ``connect``/``check`` as a whole may take this many api timeouts (then: one-line error).
CONNECT_DEADLINE_TIMEOUTS = 2.0


def open_connection(
    cloud: str | None,
    *,
    insecure: bool,
    cacert: str | None,
    timeout: float | None,
    sdk_arguments: argparse.Namespace | None = None,
) -> Any:
    """The openstacksdk connection to ``cloud`` (else ``OS_CLOUD``, else ``OS_*``); no request.

    ``sdk_arguments``: the ``openstack`` client's options as parsed (``l3ha.cloud.options``)."""
    quiet_libraries()
    options: dict[str, Any] = {}
    if insecure:
        log.warning("TLS certificate verification is OFF (--insecure); use --os-cacert instead")
        warnings.filterwarnings("ignore", message="Unverified HTTPS request")
        options["verify"] = False
        options["insecure"] = True
    if cacert:
        if not os.access(cacert, os.R_OK) or not os.path.isfile(cacert):
            raise ConfigError(f"CA bundle {cacert} is not a readable file")
        options["cacert"] = cacert
    if timeout:
        options["api_timeout"] = timeout
    with skipped_config_files() as skipped:
        try:
            return sdk_connect(cloud, sdk_arguments, **options)
        except Exception as exc:
            raise open_error(exc, cloud, skipped) from exc


def check_cloud(api: NeutronApi) -> None:
    """Authenticate and discover the Neutron endpoint, within an overall deadline.

    A few requests, each bounded by the api timeout, retried like every call.
    The whole check runs in a worker thread and gives up after
    ``CONNECT_DEADLINE_TIMEOUTS`` api timeouts.
    """
    if not api.timeout:
        api.retrying(lambda: _check_once(api))
        return
    deadline = api.timeout * CONNECT_DEADLINE_TIMEOUTS
    outcome = run_with_deadline(lambda: api.retrying(lambda: _check_once(api)), deadline)
    if outcome is None:
        raise UnreachableError(
            f"{api.where('connect')}: no answer within {deadline:g} s "
            f"(tried Keystone at {_auth_url_hint(api)} and the Neutron endpoint; "
            "check the auth URL and --api-timeout)"
        )


def _check_once(api: NeutronApi) -> None:
    with api.logged("GET", "(authenticate, discover Neutron)"), api.translated("connect"):
        _probe_identity(api)
        try:
            api.conn.network.get_endpoint()
        except Exception as exc:
            if _is_bare_config_problem(exc):
                raise ConfigError(
                    f"cloud {api.name!r}: incomplete cloud configuration "
                    f"({translate.one_line(str(exc))})"
                ) from exc
            raise


def _auth_url(api: NeutronApi) -> str | None:
    auth = getattr(api.conn.config, "auth", None) or {}
    auth_type = str(getattr(api.conn.config, "config", {}).get("auth_type") or "")
    url = auth.get("auth_url") if isinstance(auth, Mapping) else None
    if not url or auth_type in ("none", "noauth", "admin_token"):
        return None
    return str(url)


def _auth_url_hint(api: NeutronApi) -> str:
    url = _auth_url(api)
    return translate.safe_url(url) if url else "(no auth URL)"


def _probe_identity(api: NeutronApi) -> None:
    """Fetch the auth URL's version document unauthenticated before authenticating.

    keystoneauth answers a 401 to its version discovery by retrying the
    request *authenticated*, from inside the plugin's (non-reentrant) lock
    that the first authentication already holds: it deadlocks. That happens
    whenever the auth URL is not Keystone's (e.g. Neutron's own URL), so a
    401 here becomes a clear error before keystoneauth gets there. The probe
    also names an unreachable Keystone in one line.
    """
    url = _auth_url(api)
    if url is None:
        return
    where = f"reach Keystone at {translate.safe_url(url)} (cloud {api.name!r})"
    try:
        resp = api.conn.session.get(
            url, authenticated=False, raise_exc=False, connect_retries=0, timeout=api.timeout
        )
    except Exception as exc:
        raise translate_exception(exc, where) from exc
    if resp.status_code in (401, 403):
        raise AuthError(
            f"{where}: its version discovery answered HTTP {resp.status_code}, so it is "
            "not a Keystone identity URL (check auth_url / OS_AUTH_URL)"
        )
    if resp.status_code >= 500:
        raise translate.error_for_status(resp.status_code, f"{where}: version discovery")


def _is_bare_config_problem(exc: Exception) -> bool:
    """keystoneauth raises a bare ``Exception`` for e.g. a missing password."""
    return type(exc) is Exception and "required" in str(exc)

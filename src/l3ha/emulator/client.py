"""The emulator's HTTP client: find a running emulator and inject a fault into it.

I/O: reads clouds.yaml files, HTTP to the emulator. ``url_from_clouds`` finds the
emulator's URL in the ``network_endpoint_override`` (or Keystone ``auth_url``) of a
clouds.yaml entry; ``post_fault`` posts a fault to ``/_emulator/faults`` and returns its
answer. Every failure is a one-line ``l3ha.errors`` error (``l3ha emulator fault`` prints
it and exits with its code).
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from l3ha.errors import BadInputError, ConfigError, UnreachableError, UserError


def default_clouds_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "l3ha" / "clouds.yaml"


def _clouds_candidates() -> list[Path]:
    paths = []
    if os.environ.get("OS_CLIENT_CONFIG_FILE"):
        paths.append(Path(os.environ["OS_CLIENT_CONFIG_FILE"]))
    paths += [
        Path("clouds.yaml"),
        default_clouds_path(),
        Path.home() / ".config" / "openstack" / "clouds.yaml",
        Path("/etc/openstack/clouds.yaml"),
    ]
    return paths


def url_from_clouds(name: str) -> str:
    """The emulator URL from the clouds.yaml entry ``name``."""
    for path in _clouds_candidates():
        if not path.is_file():
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as err:
            raise ConfigError(f"cannot read {path}: {err}") from None
        clouds = data.get("clouds") if isinstance(data, dict) else None
        if clouds is not None and not isinstance(clouds, dict):
            raise ConfigError(f"{path}: 'clouds' must be a mapping of cloud names to settings")
        entry = (clouds or {}).get(name)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: cloud {name!r} must be a mapping of settings")
        if entry.get("network_endpoint_override"):
            return str(entry["network_endpoint_override"])
        auth = entry.get("auth")
        auth_url = str((auth if isinstance(auth, dict) else {}).get("auth_url") or "")
        if "/identity" in auth_url:
            return auth_url.split("/identity", maxsplit=1)[0] + "/"
        raise ConfigError(f"cloud {name!r} in {path} does not point at an emulator")
    raise ConfigError(
        f"no clouds.yaml entry {name!r} found (looked in "
        f"{', '.join(str(p) for p in _clouds_candidates())})"
    )


def post_fault(url: str, body: bytes) -> dict[str, Any]:
    """POST ``body`` to the emulator's fault endpoint; its JSON answer as a dict."""
    if not url.startswith(("http://", "https://")):
        raise BadInputError(f"emulator URL {url!r} is not an http:// or https:// URL")
    try:
        request = urllib.request.Request(
            url.rstrip("/") + "/_emulator/faults",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as err:
        raise UserError(_error_message(err)) from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise UnreachableError(f"emulator at {url} not reachable: {reason}") from None
    except json.JSONDecodeError:
        raise UnreachableError(f"emulator at {url} answered something that is not JSON") from None
    except (ValueError, http.client.InvalidURL) as err:  # a malformed URL (bad port, ...)
        raise BadInputError(f"emulator URL {url!r}: {err}") from None
    if not isinstance(result, dict):
        raise UnreachableError(f"emulator at {url} answered something that is not a fault result")
    return result


def _error_message(err: urllib.error.HTTPError) -> str:
    try:
        doc = json.loads(err.read())
        return str(doc["NeutronError"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"emulator answered HTTP {err.code}"

"""Fixtures of the permissions tests: a real Neutron server that enforces its policy.

Starts processes and servers on loopback. The contract suite's server trusts every
request as admin: with ``auth_strategy = noauth`` Neutron's ``NoauthFakeProjectId``
middleware elevates a request that names no project, and a request that names one
gets no context from the middleware at all, so the pecan ``ContextHook`` falls back
to ``get_admin_context()`` — admin either way. Here the ``noauth`` pipeline of
``api-paste.ini`` runs ``keystonecontext`` (``NeutronKeystoneContext``, the keystone
pipeline without ``authtoken``) instead of ``fake_project_id``: the context is built
from the ``X-User-Id``, ``X-Project-Id`` and ``X-Roles`` headers, as keystonemiddleware
would set them after validating a token, and every call is checked against the
policy. ``RoleProxy`` adds those headers for a client (openstacksdk sends none).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.contract.contract_http import Api
from tests.contract.contract_neutron import NeutronServer, configured_python
from tests.permissions.role_proxy import RoleProxy

POLICY_FILE = Path(__file__).parents[2] / "contrib" / "l3ha-policy.yaml"
TRUSTING = (
    "noauth = cors http_proxy_to_wsgi request_id fake_project_id catch_errors osprofiler "
    "extensions neutronapiapp_v2_0"
)
POLICED = (
    "noauth = cors http_proxy_to_wsgi request_id catch_errors osprofiler keystonecontext "
    "extensions neutronapiapp_v2_0"
)


def neutron_python() -> Path:
    python, reason = configured_python()
    if python is None:
        pytest.skip(f"real Neutron server unavailable: {reason}")
    return python


def policed_server(python: Path, state_dir: Path, policy_file: Path | None) -> NeutronServer:
    """A server whose API builds the context from the identity headers (see the docstring)."""
    paste = python.parent.parent / "etc" / "neutron" / "api-paste.ini"
    text = paste.read_text(encoding="utf-8")
    assert TRUSTING in text, f"{paste}: the noauth pipeline changed; update tests/permissions"
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "api-paste.ini").write_text(text.replace(TRUSTING, POLICED), encoding="utf-8")
    extra = f"\n[oslo_policy]\npolicy_file = {policy_file}\n" if policy_file else ""
    return NeutronServer(python, state_dir, extra_conf=extra)


@pytest.fixture(scope="module")
def neutron_with_recipe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NeutronServer]:
    """The real server with contrib/l3ha-policy.yaml as its policy file."""
    server = policed_server(
        neutron_python(), tmp_path_factory.mktemp("neutron-recipe"), POLICY_FILE
    )
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def admin(neutron_with_recipe: NeutronServer) -> Iterator[Api]:
    """Raw API calls as a cloud admin (the test's own set-up and checks)."""
    with RoleProxy(neutron_with_recipe.url, "admin-project", ["admin", "member", "reader"]) as p:
        yield Api(p.url)

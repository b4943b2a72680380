"""Fixtures every test gets: no cloud configuration or journal leaks in from the machine."""

from __future__ import annotations

import pytest

AMBIENT_CLOUD_VARIABLES = (
    "OS_CLOUD",
    "OS_AUTH_TYPE",
    "OS_ENDPOINT",
    "OS_AUTH_URL",
    "OS_PASSWORD",
    "OS_USERNAME",
    "OS_PROJECT_NAME",
    "OS_TOKEN",
    "OS_CLOUD_NAME",
)


@pytest.fixture(autouse=True)
def _no_ambient_cloud(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tests see only the cloud configuration and journal they set up themselves."""
    for key in AMBIENT_CLOUD_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    empty = tmp_path_factory.mktemp("noclouds") / "clouds.yaml"
    empty.write_text("clouds: {}\n", encoding="utf-8")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(empty))
    monkeypatch.setenv("L3HA_STATE_DIR", str(tmp_path_factory.mktemp("state")))

"""Errors of opening a cloud configuration, worded for operators; library log levels.

I/O: reads clouds.yaml through openstacksdk (only to name the clouds it
defines in an error) and sets levels of library loggers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

import openstack.config

from l3ha.cloud import translate
from l3ha.cloud.sdk_errors import translate_exception
from l3ha.errors import AuthError, ConfigError, L3haError, candidates_text

_QUIET_LIBRARIES = ("keystoneauth", "openstack", "urllib3", "stevedore")


def quiet_libraries() -> None:
    """Keep library logs out of l3ha's output: errors reach the operator as one line.

    With ``-vv`` (root logger at DEBUG) their warnings and info show, never
    their debug logs (request dumps).
    """
    verbose = logging.getLogger().getEffectiveLevel() <= logging.DEBUG
    for name in _QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.CRITICAL)


def open_error(exc: Exception, cloud: str | None, skipped: list[str]) -> L3haError:
    """The one-line error for ``openstack.connect`` failing."""
    if skipped:
        return ConfigError(skipped[0])
    from_env = os.environ.get("OS_CLOUD") if not cloud else None
    name = cloud or from_env
    label = f"cloud {name!r}" if name else "the configured cloud"
    source = " (from OS_CLOUD)" if from_env else ""
    error = translate_exception(exc, f"open {label}{source}")
    if isinstance(error, AuthError):
        return error
    if name and ("was not found" in str(exc) or not _defined(name)):
        return ConfigError(f"cloud {name!r}{source} not found in {_clouds_files_text()}")
    hint = "" if name else "; name a clouds.yaml entry with --os-cloud or OS_CLOUD"
    return ConfigError(f"{error.message}{hint}")


def _defined(name: str) -> bool:
    """Whether a clouds.yaml openstacksdk reads defines ``name`` (True when it cannot tell)."""
    try:
        return name in _sdk_config().get_cloud_names()
    except Exception:
        return True


def _sdk_config() -> openstack.config.OpenStackConfig:
    return openstack.config.OpenStackConfig()


def _clouds_files_text() -> str:
    """Which clouds.yaml openstacksdk read and the clouds it defines, for an error message."""
    try:
        config = _sdk_config()
        path = config.config_filename
        names = [n for n in config.get_cloud_names() if n != "envvars"]
    except Exception:
        return "clouds.yaml"
    named = os.environ.get("OS_CLIENT_CONFIG_FILE")
    if named and not os.path.exists(named):
        return f"{named} (OS_CLIENT_CONFIG_FILE: no such file)"
    if not path:
        return "any clouds.yaml (none found; set OS_CLIENT_CONFIG_FILE)"
    return f"{path} (it defines: {candidates_text(names)})"


@contextmanager
def skipped_config_files() -> Iterator[list[str]]:
    """Collect, as one-line problems, the config files openstacksdk skips as unparsable.

    openstacksdk logs a multi-line warning and goes on without the file; l3ha
    reports the file's problem instead (the caller decides whether it matters).
    """
    logger = logging.getLogger("openstack.config")
    problems: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            args = record.args if isinstance(record.args, tuple) else ()
            if str(record.msg).startswith("Skipping config file") and len(args) == 2:
                problems.append(_unparsable_file_text(str(args[0]), args[1]))

    handler = Collect(logging.WARNING)
    saved = logger.level, logger.propagate
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        yield problems
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _unparsable_file_text(path: str, error: object) -> str:
    """``clouds.yaml X is not valid YAML: <problem> (line N, column M)``, one line."""
    problem = getattr(error, "problem", None)
    mark = getattr(error, "problem_mark", None)
    if problem and mark is not None:
        detail = f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
    else:
        detail = translate.one_line(str(error), 160)
    kind = "JSON" if path.endswith(".json") else "YAML"
    return f"cloud configuration {path} is not valid {kind}: {detail}"

"""The daemon's configuration: files, flags, precedence, errors, and the committed sample."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path

import pytest
from oslo_config import cfg, generator

from l3ha.cli.main import main
from l3ha.daemon.dataplane import parse_probe_spec
from l3ha.daemon.settings import (
    WatchSettings,
    add_watch_arguments,
    list_opts,
    load_settings,
    sample_config,
)
from l3ha.errors import BadInputError

SAMPLE = Path(__file__).parents[2] / "etc" / "l3ha.conf.sample"


def parse(*argv: str, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    parser = parser or argparse.ArgumentParser()
    add_watch_arguments(parser)
    return parser.parse_args(list(argv))


def settings(
    tmp_path: Path, *argv: str, files: Sequence[str] = (), defaults: Sequence[str] = ()
) -> WatchSettings:
    args = parse(*argv, *(f"--config-file={f}" for f in files))
    return load_settings(args, default_files=defaults, environ={"L3HA_STATE_DIR": str(tmp_path)})


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_committed_sample_is_the_generated_one() -> None:
    assert SAMPLE.read_text(encoding="utf-8") == sample_config(), (
        "etc/l3ha.conf.sample is stale: run 'l3ha config sample > etc/l3ha.conf.sample'"
    )


def test_the_sample_itself_loads_to_the_defaults(tmp_path: Path) -> None:
    expected = replace(settings(tmp_path), config_files=(str(SAMPLE),))
    assert settings(tmp_path, files=[str(SAMPLE)]) == expected


def test_defaults_without_files_or_flags(tmp_path: Path) -> None:
    s = settings(tmp_path)
    assert (s.interval, s.once, s.dry_run) == (10.0, False, False)
    assert (s.dead_after, s.dead_observations, s.max_dead_fraction) == (75.0, 3, 0.55)
    assert (s.dataplane_probe, s.probe_routers, s.dataplane_confirms) == ("", 3, False)
    assert (s.max_moves_per_minute, s.disrupted_moves_per_minute) == (600.0, 60.0)
    assert (s.max_moves_per_cycle, s.full_resync, s.concurrency) == (400, 30, 8)
    assert (s.shutdown_timeout, s.port_timeout) == (60.0, 300.0)
    assert (s.metrics_port, s.metrics_host, s.log_format) == (9464, "127.0.0.1", "text")
    assert s.state_dir == tmp_path and s.os_cloud is None and not s.auto_rebalance
    assert s.coordination == (tmp_path.resolve() / "coordination").as_uri()
    assert s.config_files == ()


def test_flag_beats_config_file_beats_default_file_beats_default(tmp_path: Path) -> None:
    default_file = write(
        tmp_path / "etc.conf", "[watch]\ninterval = 5\ndead_after = 90\nprobe_routers = 4\n"
    )
    user_file = write(tmp_path / "user.conf", "[watch]\ndead_after = 100\nprobe_routers = 5\n")
    s = settings(tmp_path, "--probe-routers", "6", files=[user_file], defaults=[default_file])
    assert (s.interval, s.dead_after, s.probe_routers) == (5.0, 100.0, 6)
    assert s.config_files == (default_file, user_file)
    assert s.max_dead_fraction == 0.55


def test_later_config_files_win_and_a_missing_default_file_is_skipped(tmp_path: Path) -> None:
    first = write(tmp_path / "a.conf", "[watch]\nconcurrency = 2\nfull_resync = 7\n")
    second = write(tmp_path / "b.conf", "[watch]\nconcurrency = 3\n")
    s = settings(tmp_path, files=[first, second], defaults=[str(tmp_path / "absent.conf")])
    assert (s.concurrency, s.full_resync) == (3, 7)


def test_boolean_flags_override_the_file_both_ways(tmp_path: Path) -> None:
    conf = write(tmp_path / "l3ha.conf", "[watch]\ndry_run = true\nauto_rebalance = false\n")
    assert settings(tmp_path, files=[conf]).dry_run is True
    s = settings(tmp_path, "--no-dry-run", "--auto-rebalance", files=[conf])
    assert (s.dry_run, s.auto_rebalance) == (False, True)


def test_default_section_options(tmp_path: Path) -> None:
    conf = write(
        tmp_path / "l3ha.conf",
        "[DEFAULT]\nos_cloud = prod\nlog_format = json\n"
        "[watch]\nmax_moves_per_cycle = 12\ncoordination = etcd3+http://127.0.0.1:2379\n",
    )
    s = settings(tmp_path, files=[conf])
    assert (s.os_cloud, s.log_format, s.max_moves_per_cycle) == ("prod", "json", 12)
    assert s.coordination == "etcd3+http://127.0.0.1:2379"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[watch\ninterval = 1\n", r"config file .*l3ha.conf: .*Invalid section"),
        (
            "[watch]\ndead_afer = 60\n",
            r"\[watch\] dead_afer: unknown option \(did you mean dead_after\?\)",
        ),
        (
            "[watch]\nfull-resync = 3\n",
            r"full-resync: unknown option \(did you mean full_resync\?\)",
        ),
        ("[watch]\ndead_after = soon\n", r"\[watch\] dead_after = 'soon': could not convert"),
        ("[watch]\nmax_dead_fraction = 1.5\n", r"\[watch\] max_dead_fraction = '1.5': .*less than"),
        ("[DEFAULT]\nlog_format = xml\n", r"\[DEFAULT\] log_format = 'xml'"),
        ("[watch]\ndataplane_probe = udp:53\n", r"dataplane_probe 'udp:53': expected 'tcp:PORT'"),
        (
            "[watch]\ncoordination = localhost:2379\n",
            r"coordination 'localhost:2379': expected a URL",
        ),
        ("[watch]\ndisrupted_moves_per_minute = 900\n", r"must not exceed max_moves_per_minute"),
        ("[watch]\ndataplane_confirms = true\n", r"dataplane_confirms needs dataplane_probe"),
        ("[watch]\ndataplane_confirms = maybe\n", r"\[watch\] dataplane_confirms = 'maybe'"),
    ],
)
def test_bad_files_are_one_line_bad_input_errors(tmp_path: Path, text: str, message: str) -> None:
    conf = write(tmp_path / "l3ha.conf", text)
    with pytest.raises(BadInputError, match=message) as caught:
        settings(tmp_path, files=[conf])
    assert "\n" not in str(caught.value)
    if "config file" in message:
        assert conf in str(caught.value)


def test_other_sections_are_left_to_their_owners(tmp_path: Path) -> None:
    conf = write(tmp_path / "l3ha.conf", "[probe]\nwhatever = 1\n[watch]\nonce = true\n")
    assert settings(tmp_path, files=[conf]).once is True


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"config file .*nope.conf: not found"):
        settings(tmp_path, files=[str(tmp_path / "nope.conf")])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--interval", "0"], r"--interval '0': .*greater than or equal to 0.1"),
        (["--dead-observations", "three"], r"--dead-observations 'three'"),
        (["--metrics-port", "70000"], r"--metrics-port '70000'"),
        (["--dataplane-probe", "tcp:99999"], r"dataplane_probe 'tcp:99999'"),
        (["--dataplane-confirms"], r"dataplane_confirms needs dataplane_probe"),
        (["--dataplane-confirms", "--dataplane-probe", ""], r"dataplane_confirms needs"),
    ],
)
def test_bad_flags_are_one_line_bad_input_errors(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    with pytest.raises(BadInputError, match=message):
        settings(tmp_path, *argv)


def test_dataplane_confirms_with_a_probe(tmp_path: Path) -> None:
    s = settings(tmp_path, "--dataplane-probe", "icmp", "--dataplane-confirms")
    assert (s.dataplane_probe, s.dataplane_confirms) == ("icmp", True)
    assert not settings(tmp_path, "--dataplane-probe", "icmp").dataplane_confirms


@pytest.mark.parametrize(
    ("probe", "kind", "port"), [("tcp:7", "tcp", 7), ("icmp", "icmp", 0), ("ICMP ", "icmp", 0)]
)
def test_dataplane_probe_forms(tmp_path: Path, probe: str, kind: str, port: int) -> None:
    s = settings(tmp_path, f"--dataplane-probe={probe}")
    spec = parse_probe_spec(s.dataplane_probe)
    assert (s.dataplane_probe, spec.kind, spec.port) == (probe.strip().lower(), kind, port)


def test_flags_the_caller_defined_already_are_kept_and_read(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--os-cloud", default=None)
    args = parse("--os-cloud", "lab", parser=parser)
    s = load_settings(args, default_files=(), environ={"L3HA_STATE_DIR": str(tmp_path)})
    assert s.os_cloud == "lab"


def test_every_option_is_a_field_a_flag_and_explained() -> None:
    names = {opt.dest for _group, opts in list_opts() for opt in opts}
    assert names == {f.name for f in fields(WatchSettings)} - {"config_files"}
    parser = argparse.ArgumentParser()
    add_watch_arguments(parser)
    flags = {o for action in parser._actions for o in action.option_strings}
    for _group, opts in list_opts():
        for opt in opts:
            assert f"--{opt.dest.replace('_', '-')}" in flags
            assert len(opt.help) >= 40, f"{opt.dest}: help too short for an operator"


def test_oslo_config_generator_formats_every_option() -> None:
    out = io.StringIO()
    conf = cfg.ConfigOpts()
    generator.register_cli_opts(conf)
    conf(args=["--namespace", "unused"])
    formatter = generator._OptFormatter(conf, output_file=out)
    for group, opts in list_opts():
        formatter.format_group(group)
        for opt in opts:
            formatter.format(opt, group)
    text = out.getvalue()
    assert "Warning" not in text
    assert "#dead_after = 75.0" in text and "[watch]" in text


def test_l3ha_config_sample_prints_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "sample"]) == 0
    assert capsys.readouterr().out == sample_config()


def test_l3ha_config_show_checks_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path / "good.conf", "[watch]\ninterval = 2\n")
    bad = write(tmp_path / "bad.conf", "[watch]\nintervall = 2\n")
    assert main(["config", "show", "--config-file", good, "--once"]) == 0
    out = capsys.readouterr().out
    assert "interval = 2.0\n" in out and "once = True\n" in out
    assert main(["config", "show", "--config-file", bad]) == 2
    assert "unknown option (did you mean interval?)" in capsys.readouterr().err


def test_the_daemons_api_rate_comes_from_the_config_unless_the_flag_is_given(
    tmp_path: Path,
) -> None:
    """``l3ha watch`` shares ``--api-rate`` with the one-shot commands, but without their
    default (100/s): the daemon's own default (50/s) or its config file decides."""
    from l3ha.cli.common import DEFAULT_API_RATE, add_cloud_options

    def watch_settings(*argv: str, files: Sequence[str] = ()) -> WatchSettings:
        parser = argparse.ArgumentParser()
        add_cloud_options(parser, api_rate_default=None)
        args = parse(*argv, *(f"--config-file={f}" for f in files), parser=parser)
        return load_settings(args, default_files=(), environ={"L3HA_STATE_DIR": str(tmp_path)})

    assert watch_settings().api_rate == 50.0 < DEFAULT_API_RATE
    conf = write(tmp_path / "rate.conf", "[DEFAULT]\napi_rate = 20\n")
    assert watch_settings(files=[conf]).api_rate == 20.0
    assert watch_settings("--api-rate", "7.5", files=[conf]).api_rate == 7.5
    with pytest.raises(SystemExit):  # argparse: not a positive number
        watch_settings("--api-rate", "0")

"""The flags `qualify run` and `calibrate collect` share become one QualifyOptions, the boot timeout included."""

import click
import pytest
from click.testing import CliRunner

from hotfloat.cli.qualify_options import engine_options, qualify_options


def _parsed(*argv: str) -> dict:
    """The keywords a command decorated with `engine_options` (and the boot and seed flags) receives."""
    seen = {}

    @click.command()
    @engine_options
    @click.option("--seed", type=int, default=None)
    @click.option("--boot-timeout", type=float, default=None)
    def cmd(**flags):
        seen.update(flags)

    result = CliRunner().invoke(cmd, list(argv))
    assert result.exit_code == 0, result.output
    return seen


def test_the_boot_timeout_and_the_rule_flags_reach_the_options():
    opts = qualify_options(**_parsed("--device", "cpu", "--look-rounds", "5", "--seed", "7", "--boot-timeout", "42"))
    assert opts.startup_timeout_s == 42 and opts.rule.look_rounds == 5 and opts.seed == 7


def test_without_a_boot_timeout_the_device_default_stands():
    from hotfloat.qualify import QualifyOptions

    got = qualify_options(**_parsed("--device", "cpu")).startup_timeout_s
    assert got == QualifyOptions.for_device("cpu").startup_timeout_s != 42


def test_an_unknown_flag_is_a_programming_error_not_a_silent_default():
    with pytest.raises(TypeError):
        qualify_options(**_parsed("--device", "cpu"), look_round=3)

"""`hotfloat env`: a table for people, the whole record as JSON for machines."""

import json

from click.testing import CliRunner

from hotfloat.cli.main import cli
from hotfloat.env import EnvIdentity


def _invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_json_round_trips_into_the_record():
    identity = EnvIdentity(**json.loads(_invoke("env", "--json")))
    assert identity.torch and identity.python


def test_table_names_fields_and_reasons():
    out = _invoke("env")
    assert "torch" in out and "why empty" in out


def test_help_says_what_it_is_for():
    assert "environment identity" in _invoke("env", "--help")

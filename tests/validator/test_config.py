"""`ValidatorConfig` from a TOML file with flags over it; a hostile or inconsistent file is one error line."""

from __future__ import annotations

import json

import pytest

from hotfloat.cli.main import main
from hotfloat.errors import InputError
from hotfloat.validator.config import load_config

FILE = """\
ledger = "{db}"
compiler = "compiler:50051"
admission = ["dns:///admission.hotfloat.svc:50051"]
qualification = ["q-0.q.svc:50051", "q-1.q.svc:50051", "q-2.q.svc:50051"]
token_file = "/run/secrets/token"
workers = 6

[tls]
ca = "ca.pem"
cert = "v.pem"
key = "v.key"

[chain]
network = "finney"
netuid = 7
wallet = "validator"
"""


def test_a_file_with_several_qualification_endpoints_loads_typed(tmp_path):
    path = tmp_path / "v.toml"
    path.write_text(FILE.format(db=tmp_path / "l.db"))
    config = load_config(str(path), {})
    assert config.stages == "remote" and config.qualifies and config.workers == 6
    assert config.qualification == ["q-0.q.svc:50051", "q-1.q.svc:50051", "q-2.q.svc:50051"]
    assert (config.tls.ca, config.chain.network, config.chain.netuid, config.chain.hotkey) == (
        "ca.pem",
        "finney",
        7,
        "default",
    )


def test_flags_override_the_file_key_by_key(tmp_path):
    path = tmp_path / "v.toml"
    path.write_text(FILE.format(db=tmp_path / "l.db"))
    config = load_config(
        str(path),
        {"workers": 2, "qualification": ["q-9:1"], "chain": {"hotkey": "hk"}},
        defaults={"ledger": "ignored.db", "workers": 1},
    )
    assert config.workers == 2 and config.qualification == ["q-9:1"] and config.ledger == str(tmp_path / "l.db")
    assert (config.chain.network, config.chain.wallet, config.chain.hotkey) == ("finney", "validator", "hk")
    local = load_config(None, {"ledger": "x.db", "stages": "local", "rule_from": "r.json"})
    assert local.qualifies and local.through is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("x = " + "[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ("ledger = 'a'\nledger = 'b'\n", "not valid TOML"),
        ("ledger = 'a'\nstages = 'local'\nsecret_backdoor = true\n", "secret_backdoor: unknown key"),
        ("ledger = 'a'\nstages = 'local'\nworkers = 'many'\n", "workers: Input should be a valid integer"),
        ("ledger = 'a'\nstages = 'local'\ncompiler = 'c.sock'\n", "either --spawn or both --compiler and --admission"),
        (
            "ledger = 'a'\ncompiler = 'c.sock'\nadmission = ['a.sock']\nrule_from = 'r.json'\n",
            "--rule-from applies only",
        ),
        ("ledger = 'a'\nstages = 'spawned'\n[chain]\nnetuid = 7\n", "apply only with --chain"),
        ("ledger = 'a'\nstages = 'spawned'\n[tls]\nca = 'ca.pem'\n", "mutual TLS needs all"),
        ("ledger = 'a'\nstages = 'local'\n[settlement]\nprovisional = 'paid'\n", "settlement.provisional: Input"),
        ("ledger = 'a'\nstages = 'local'\n[settlement]\nmax_runs = 1\n", "settlement.max_runs: Input should be"),
        ("x" * (2 << 20), "limit"),
    ],
)
def test_a_hostile_or_inconsistent_file_is_one_input_error(tmp_path, text, says):
    path = tmp_path / "v.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_config(str(path), {})
    assert says in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith(f"--config {path}: ")


def test_the_settlement_policy_comes_from_its_table_and_its_flags_win_key_by_key(tmp_path):
    """What a PASS is worth is the validator's setting: by default a PASS is reproduced up to three runs to bring its
    combined calibration bound under 1%, and one that cannot is held from the crowns."""
    from hotfloat.cli.validator_run_cmd import _settings

    default = load_config(None, {"ledger": "x.db", "stages": "local"}).settlement
    assert (default.target, default.max_runs, default.provisional) == (0.01, 3, "held")
    path = tmp_path / "v.toml"
    path.write_text("ledger = 'a'\nstages = 'local'\n[settlement]\nmax_runs = 5\ntarget = 0.02\n")
    config = load_config(str(path), _settings({"provisional": "crowned"}))
    assert (config.settlement.max_runs, config.settlement.target, config.settlement.provisional) == (5, 0.02, "crowned")


def test_validator_run_reads_the_file_and_its_flags_win(capsys, tmp_path):
    path = tmp_path / "v.toml"
    path.write_text(f'ledger = "{tmp_path / "file.db"}"\nstages = "local"\nworkers = 0\n')
    with pytest.raises(SystemExit) as done:
        main(["validator", "run", "--config", str(path)])
    out, err = capsys.readouterr()
    assert (
        done.value.code == 2 and err.count("\n") == 1 and "workers: Input should be greater than or equal to 1" in err
    )
    path.write_text(f'ledger = "{tmp_path / "file.db"}"\nstages = "local"\nworkers = 3\n')
    with pytest.raises(SystemExit) as done:
        main(["validator", "run", "--config", str(path), "--ledger", str(tmp_path / "flag.db"), "--json"])
    out, err = capsys.readouterr()
    assert done.value.code == 0, err
    assert (
        json.loads(out)["counts"]["received"] == 0
        and (tmp_path / "flag.db").exists()
        and not (tmp_path / "file.db").exists()
    )


def test_the_run_says_why_it_stops_short_of_scored():
    spawned = load_config(None, {"ledger": "x.db", "stages": "spawned"})
    last, why = spawned.last_state()
    assert last == "admitted" and "--rule-from" in why and "no qualification service" in why
    remote = load_config(None, {"ledger": "x.db", "stages": "remote", "compiler": "c:1", "admission": ["a:1"]})
    assert remote.last_state()[0] == "admitted" and "--qualification ADDRESS" in remote.last_state()[1]
    assert load_config(None, {"ledger": "x.db", "stages": "spawned", "rule_from": "r.json"}).last_state() == (
        "scored",
        "",
    )
    assert load_config(None, {"ledger": "x.db", "stages": "local", "through": "built"}).last_state() == (
        "built",
        "--through built",
    )

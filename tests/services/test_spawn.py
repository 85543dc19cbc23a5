"""`--quick` is one setting (`hotfloat.admission.scope.QUICK_ADMISSION`): the flags a spawned or containerised
admission service is started with give it the very `StageConfig` a validator's in-process stages run with."""

from __future__ import annotations

import pytest

import hotfloat_services.serve
from hotfloat.cli.serve_cmd import serve
from hotfloat.image import compose
from hotfloat.validator import StageConfig
from hotfloat.validator.config import ValidatorConfig
from hotfloat_services.validator.node import stage_config
from hotfloat_services.validator.spawn import service_args


class Started(Exception):
    """Raised in place of starting the server, once `serve` has made its config."""


@pytest.mark.parametrize("quick", [True, False])
def test_spawned_admission_flags_give_the_in_process_settings(quick, monkeypatch, token_file, sockdir):
    made: list[StageConfig] = []

    def start(name, where, *, config, **kwargs):
        made.append(config)
        raise Started

    monkeypatch.setattr(hotfloat_services.serve, "start", start)
    flags = service_args("admission", quick=quick)
    with pytest.raises(Started):  # `hotfloat serve` parses the flags and builds its config as it does in a service
        serve.main(
            [
                "admission",
                "--socket",
                str(sockdir / "a.sock"),
                "--token-file",
                str(token_file),
                "--device",
                "cpu",
                *flags,
            ],
            standalone_mode=False,
        )
    in_process = stage_config(ValidatorConfig(ledger="l.db", stages="local", device="cpu", quick=quick))
    assert made == [in_process]
    assert (in_process.verify_max_shapes, in_process.verify_dtypes) == ((1, ("fp32",)) if quick else (None, None))
    assert compose.services(quick=quick)[1].extra == flags  # `image up --quick` starts its admission container alike


def test_spawned_qualification_runs_the_validators_attention_backend(monkeypatch, token_file, sockdir):
    made: list[StageConfig] = []

    def start(name, where, *, config, **kwargs):
        made.append(config)
        raise Started

    monkeypatch.setattr(hotfloat_services.serve, "start", start)
    flags = service_args("qualification", attention="flashinfer")
    argv = ["qualification", "--socket", str(sockdir / "q.sock"), "--token-file", str(token_file), "--device", "cpu"]
    with pytest.raises(Started):
        serve.main([*argv, *flags], standalone_mode=False)
    config = ValidatorConfig(ledger="l.db", stages="local", device="cpu", attention="flashinfer")
    assert made == [stage_config(config)] and made[0].qualify_attention == "flashinfer"

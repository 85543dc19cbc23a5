"""Every setting a qualification engine gives SGLang that is not SGLang's own default is listed, with its reason, in
hotfloat.engine.deviations, and each listed default is the pinned SGLang's (read from `ServerArgs` in the engine
venv): a new setting, a changed one, or an SGLang upgrade that moves a default fails here."""

import json
import subprocess
from pathlib import Path

import pytest

from hotfloat.compat import engine_python
from hotfloat.engine.deviations import DEVIATIONS
from hotfloat.engine.sglang_engine import ENGINE_ARGS, settings_for

SPEC = {"graph_batches": [1, 8], "mem_fraction": 0.2, "kv_tokens": 4096, "dtype": "bf16"}
PROBE = """\
import dataclasses, json
from sglang.srt.server_args import ServerArgs
out = {}
for f in dataclasses.fields(ServerArgs):
    if f.default is not dataclasses.MISSING:
        out[f.name] = f.default
    elif f.default_factory is not dataclasses.MISSING:
        out[f.name] = f.default_factory()
print(json.dumps(out, default=repr))
"""


@pytest.fixture(scope="module")
def stock() -> dict:
    python = engine_python()
    assert Path(python).exists(), f"{python} missing: `make engine` builds the engine venv (make test does)"
    p = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_every_setting_that_is_not_sglangs_default_is_listed_with_its_reason(stock):
    given = {**settings_for(SPEC), **ENGINE_ARGS}
    assert set(given) <= set(stock), sorted(set(given) - set(stock))
    differs = {k for k, v in given.items() if v != stock[k]}
    listed = {d.setting for d in DEVIATIONS}
    assert differs <= listed, f"not in hotfloat.engine.deviations: {sorted(differs - listed)}"
    assert listed <= set(given), f"listed but never given: {sorted(listed - set(given))}"
    assert all(len(d.why) > 20 for d in DEVIATIONS)


def test_each_listed_default_is_the_pinned_sglangs(stock):
    assert {d.setting: d.stock for d in DEVIATIONS} == {d.setting: stock[d.setting] for d in DEVIATIONS}


def test_the_identity_holds_the_settings_and_not_the_plumbing():
    assert {d.setting for d in DEVIATIONS if d.in_identity} <= set(settings_for(SPEC))
    assert {d.setting for d in DEVIATIONS if not d.in_identity} == set(ENGINE_ARGS)


def test_the_attention_backend_is_the_validators_named_one():
    assert settings_for(SPEC)["attention_backend"] == "triton"
    assert settings_for({**SPEC, "attention": "flashinfer"})["attention_backend"] == "flashinfer"

"""verify_bundle end to end with real sandboxed children: the examples, applicability, replay and fail-closed."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.errors import InfrastructureError, SandboxUnavailable
from hotfloat.sandbox import process as spawn_module
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle
from hotfloat.verify import launcher as launcher_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GPU_ONLY = (
    'bundle_id = "g"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    'source = "kernels/k.py"\nentry = "run"\narchitectures = ["sm_90"]\n'
)
QUICK = dict(dtypes=["bf16"], max_shapes=2, timeout_s=120)

EXAMPLE_VERDICTS = {
    "silu_torch": (Status.PASS, ""),
    "rmsnorm_triton": (Status.PASS, ""),
    "fused_add_rmsnorm_triton": (Status.PASS, ""),
    "silu_broken": (Status.FAIL, "elements outside atol"),
    "silu_sparse": (Status.FAIL, "left unwritten"),
    "rmsnorm_broken": (Status.FAIL, "elements outside atol"),
    "silu_mutates_input": (Status.FAIL, "input mutated: x"),
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_VERDICTS))
def test_examples_get_the_right_verdict_for_the_right_reason(name):
    status, reason = EXAMPLE_VERDICTS[name]
    report = verify_bundle(load_bundle(EXAMPLES / name), VerifyOptions(seed=11, **QUICK))
    assert report.status is status, [(r.shape, r.reason) for r in report.rows]
    assert report.sandboxed and {"namespaces", "rlimits"} <= set(report.bounds)
    assert all(r.trials == 3 and len(r.counts) == 3 for r in report.rows)
    if status is Status.FAIL:
        assert all(r.status is Status.FAIL and reason in r.reason for r in report.rows), [r.reason for r in report.rows]
    else:
        assert all(r.max_abs_err is not None for r in report.rows)


def test_nothing_applicable_is_n_a(make_bundle):
    report = verify_bundle(load_bundle(make_bundle(manifest=GPU_ONLY)), VerifyOptions())
    assert report.status is Status.N_A and "not built for cpu" in report.rows[0].reason
    assert 'add "cpu" to its architectures' in report.rows[0].reason
    filtered = verify_bundle(
        load_bundle(EXAMPLES / "silu_torch"), VerifyOptions(dtypes=["fp16"]).model_copy(update={"dtypes": []})
    )
    assert filtered.status is Status.N_A and "no requested dtype" in filtered.rows[0].reason


def test_a_seed_replays_the_same_run_and_no_seed_draws_a_fresh_secret(make_bundle):
    bundle = load_bundle(EXAMPLES / "silu_sparse")
    opts = dict(dtypes=["fp32"], max_shapes=1)
    first, again = (verify_bundle(bundle, VerifyOptions(seed=99, **opts)) for _ in range(2))
    assert [(r.shape, r.counts, r.reason) for r in first.rows] == [(r.shape, r.counts, r.reason) for r in again.rows]
    gpu_only = load_bundle(make_bundle(manifest=GPU_ONLY))
    seeds = {verify_bundle(gpu_only, VerifyOptions()).seed for _ in range(3)}
    assert len(seeds) == 3 and all(s.bit_length() > 32 for s in seeds)


def test_load_failure_is_one_row_with_the_error(make_bundle):
    broken = make_bundle("import torch\nraise ImportError('no such kernel lib')\n")
    report = verify_bundle(load_bundle(broken), VerifyOptions(dtypes=["fp32"], max_shapes=1))
    assert report.status is Status.FAIL
    [row] = report.rows
    assert "loading the op failed: ImportError: no such kernel lib" in row.reason
    missing = verify_bundle(load_bundle(make_bundle(name="e", entry="nope")), VerifyOptions(dtypes=["fp32"]))
    [row] = missing.rows
    assert (
        row.status is Status.FAIL
        and "entry 'nope' is not a callable in kernels/k.py (its functions: run;" in row.reason
    )


def test_unsandboxed_runs_but_says_so(caplog):
    report = verify_bundle(
        load_bundle(EXAMPLES / "silu_torch"), VerifyOptions(sandboxed=False, dtypes=["fp32"], max_shapes=1)
    )
    assert report.status is Status.PASS and report.sandboxed is False and "namespaces" not in report.bounds
    assert "UNSANDBOXED" in caplog.text


def test_missing_sandbox_fails_closed(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    spawn_module._probe.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="bubblewrap .* not installed"):
            verify_bundle(load_bundle(EXAMPLES / "silu_torch"), VerifyOptions(dtypes=["fp32"], max_shapes=1))
    finally:
        monkeypatch.undo()
        spawn_module._probe.cache_clear()


@pytest.mark.parametrize(
    "body, why", [("import time\ntime.sleep(60)\n", "deadline passed"), ("raise SystemExit(3)\n", "peer closed")]
)
def test_a_child_that_cannot_start_is_an_infrastructure_error(monkeypatch, tmp_path, body, why):
    """A child that never says hello (one that hangs, one that dies first) stops the run as an infrastructure error,
    within the startup bound plus the one-second grace, not after the op's timeout."""
    (tmp_path / "child.py").write_text(body)
    (tmp_path / "wire.py").write_text("")
    monkeypatch.setattr(launcher_module, "HERE", tmp_path)
    started = time.monotonic()
    with pytest.raises(InfrastructureError, match="did not start") as info:
        verify_bundle(
            load_bundle(EXAMPLES / "silu_torch"), VerifyOptions(dtypes=["fp32"], max_shapes=1, startup_timeout_s=0.5)
        )
    assert time.monotonic() - started < 30 and re.search(why, str(info.value), re.I)


def test_scan_is_the_first_gate_and_nothing_runs_after_a_finding():
    seen = []
    report = verify_bundle(
        load_bundle(EXAMPLES / "silu_banned_import"), VerifyOptions(seed=1, **QUICK), on_row=seen.append
    )
    assert report.status is Status.FAIL and report.bounds == [] and seen == report.rows
    (row,) = report.rows
    assert row.trials == 0 and row.reason.startswith("scan refused the bundle: kernels/silu.py:3: import of 'socket'")


def test_on_row_streams_every_row_once_as_it_becomes_final():
    seen = []
    report = verify_bundle(
        load_bundle(EXAMPLES / "silu_torch"),
        VerifyOptions(seed=5, dtypes=["fp32", "bf16"], max_shapes=1, trials=2),
        on_row=seen.append,
    )
    assert len(seen) == len(report.rows) == 8, "per dtype: one published shape, the drawn one, two corners"
    assert sorted(seen, key=lambda r: (r.dtype, r.shape)) == sorted(report.rows, key=lambda r: (r.dtype, r.shape))


def test_one_trial_still_tests_padded_rows():
    ignores = Path(__file__).resolve().parents[1] / "adversarial" / "bundles" / "ignores_stride"
    report = verify_bundle(load_bundle(ignores), VerifyOptions(seed=2, dtypes=["fp32"], max_shapes=1, trials=1))
    assert report.status is Status.FAIL and all(r.trials == 1 for r in report.rows)
    assert any("written outside the view" in r.reason for r in report.rows), [r.reason for r in report.rows]


def test_a_failing_rows_reason_quotes_the_rows_max_error():
    report = verify_bundle(
        load_bundle(EXAMPLES / "silu_broken"), VerifyOptions(dtypes=["fp32"], trials=3, seed=1, max_shapes=3)
    )
    failed = [r for r in report.rows if r.status is Status.FAIL and r.max_abs_err is not None]
    assert failed and all(f"(max abs err {r.max_abs_err:.3g})" in r.reason for r in failed), [
        (r.max_abs_err, r.reason) for r in failed
    ]


def test_the_first_child_starts_before_this_process_imports_torch():
    """The child spends its start-up importing torch, as the parent does: started first, the two overlap."""
    code = (
        "import sys\nfrom hotfloat.verify import launcher\nseen = []\nlaunch = launcher.ChildSession.launch\n"
        "launcher.ChildSession.launch = lambda self, s: seen.append('torch' in sys.modules) or launch(self, s)\n"
        "from hotfloat.bundle import load_bundle\nfrom hotfloat.verify import VerifyOptions, verify_bundle\n"
        f"bundle = load_bundle({str(EXAMPLES / 'silu_torch')!r})\n"
        "report = verify_bundle(bundle, VerifyOptions(seed=1, dtypes=['fp32'], max_shapes=1, trials=1))\n"
        "print(report.status.value, seen)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.stdout.split() == ["PASS", "[False]"], p.stdout + p.stderr


TWO_OPS = 'bundle_id = "two"\nabi_version = "hotfloat-op-abi-v1"\n' + "".join(
    f'[[ops]]\nslot = "activation.silu_and_mul"\nvariant = "{v}"\nsource = "kernels/k.py"\nentry = "run"\n'
    f'metadata = "metadata/{v}.json"\n'
    for v in ("small", "large")
)


def test_each_ops_child_is_launched_while_the_op_before_it_runs(make_bundle, monkeypatch):
    from hotfloat.verify import launcher

    events = []
    for name in ("launch", "ready", "close"):
        original = getattr(launcher.ChildSession, name)
        monkeypatch.setattr(
            launcher.ChildSession,
            name,
            lambda self, *a, _o=original, _n=name: (events.append((_n, self.run_id)), _o(self, *a))[1],
        )
    kernel = "import torch\n\n\ndef run(x, out):\n    d = x.shape[1] // 2\n    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])\n"
    bundle = load_bundle(
        make_bundle(
            kernel,
            manifest=TWO_OPS,
            files={"metadata/small.json": '{"max_num_tokens": 64}', "metadata/large.json": '{"min_num_tokens": 65}'},
        )
    )
    report = verify_bundle(bundle, VerifyOptions(seed=3, dtypes=["fp32"], max_shapes=1, trials=1))
    assert report.status is Status.PASS and {r.variant for r in report.rows} == {"small", "large"}
    first, second = dict.fromkeys(run for _, run in events)
    assert events == [
        ("launch", first),
        ("launch", second),
        ("ready", first),
        ("close", first),
        ("ready", second),
        ("close", second),
    ], "the second child starts before the first op runs; each is killed after its op"

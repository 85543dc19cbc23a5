"""`hotfloat bundle import` of Cacheon's attention calls that hotfloat serves through an adapter written into the
bundle: attention.sdpa becomes attention.prefill and Cacheon's unpaged attention.decode becomes hotfloat's paged one,
each verified like any kernel (a faithful kernel PASSes, a wrong one FAILs); an entry that takes neither call is
refused in one line naming the slot."""

import json
import shutil
from pathlib import Path

import pytest

from hotfloat.authoring.cacheon import import_cacheon
from hotfloat.bundle import load_bundle
from hotfloat.errors import InputError
from hotfloat.scan import scan_bundle
from hotfloat.verdict import Status
from hotfloat.verify import VerifyOptions, verify_bundle

FIXTURES = Path(__file__).parent / "cacheon"


def _verify(path: Path) -> Status:
    report = verify_bundle(load_bundle(path), VerifyOptions(device="cpu", seed=42, max_shapes=3, trials=2))
    assert report.sandboxed
    return report.status


def test_sdpa_becomes_prefill_through_an_adapter_that_verifies(tmp_path):
    result = import_cacheon(FIXTURES / "sdpa_torch", tmp_path / "out")
    changes = {(c.file, c.field, c.was): c.now for c in result.changes}
    assert changes[("manifest.toml", "ops[0].slot", "attention.sdpa")].startswith("attention.prefill (through")
    assert changes[("manifest.toml", "ops[0].source", "kernels/attention.py")] == "kernels/attention_hotfloat.py"
    assert changes[("manifest.toml", "ops[0].entry", "attention")] == "prefill"
    assert "has no fp32" in changes[("manifest.toml", "ops[0].dtypes", "float32")]
    assert changes[("metadata/attention.json", "graph_safe", "true")].startswith("false")
    bundle = load_bundle(tmp_path / "out")
    [op] = bundle.ops
    assert (op.entry.slot, op.entry.entry, op.dtypes) == ("attention.prefill", "prefill", ["bf16", "fp16"])
    assert (
        not op.metadata.graph_safe
        and bundle.files["kernels/attention.py"] == (FIXTURES / "sdpa_torch" / "kernels" / "attention.py").read_bytes()
    )  # the Cacheon kernel itself is carried unchanged
    assert scan_bundle(bundle).clean
    assert _verify(tmp_path / "out") is Status.PASS


def test_an_sdpa_kernel_that_ignores_causal_imports_and_fails_verify(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "sdpa_torch", src)
    kernel = src / "kernels" / "attention.py"
    kernel.write_text(kernel.read_text().replace("    if causal:", "    if False:"))
    import_cacheon(src, tmp_path / "out")
    assert _verify(tmp_path / "out") is Status.FAIL


def test_cacheon_unpaged_decode_is_served_from_the_paged_pool_and_its_setup_is_dropped(tmp_path):
    result = import_cacheon(FIXTURES / "decode_torch", tmp_path / "out")
    fields = {(c.file, c.field) for c in result.changes}
    assert ("kernels/attention_decode_hotfloat.py", "adapter") in fields
    assert ("kernels/attention_decode.py", "setup") in fields  # removed from the Cacheon kernel, not the adapter
    bundle = load_bundle(tmp_path / "out")
    [op] = bundle.ops
    assert (op.entry.slot, op.entry.source) == ("attention.decode", "kernels/attention_decode_hotfloat.py")
    assert b"sglang" not in bundle.files["kernels/attention_decode.py"] and scan_bundle(bundle).clean
    assert _verify(tmp_path / "out") is Status.PASS


def test_a_decode_kernel_that_ignores_seq_lens_fails_verify(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "decode_torch", src)
    kernel = src / "kernels" / "attention_decode.py"
    kernel.write_text(kernel.read_text().replace(">= seq_lens[:, None]", ">= k.shape[1]"))
    import_cacheon(src, tmp_path / "out")
    assert _verify(tmp_path / "out") is Status.FAIL  # the padding (a repeated last token) is attended


def test_an_entry_taking_neither_call_is_refused_in_one_line_naming_the_slot(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "decode_torch", src)
    (src / "kernels" / "attention_decode.py").write_text(  # a sparse top-k decode: another slot's call
        "def attention_decode(q, k_cache, v_cache, req_to_token, seq_lens, topk_idx, out, sm_scale, block):\n"
        "    out.zero_()\n"
    )
    with pytest.raises(InputError) as e:
        import_cacheon(src, tmp_path / "out")
    message = str(e.value)
    assert "\n" not in message and message.startswith("ops[0]: attention.decode: kernels/attention_decode.py:")
    assert "Cacheon's attention.decode(q, k, v, seq_lens, sm_scale, out)" in message
    assert "hotfloat's attention.decode(q[B,Hq,D], k_buffer" in message and not (tmp_path / "out").exists()


def test_a_decode_entry_already_written_to_hotfloats_call_is_imported_as_it_is(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "decode_torch", src)
    (src / "kernels" / "attention_decode.py").write_text(
        "def attention_decode(q, k_buffer, v_buffer, kv_indptr, kv_indices, out, sm_scale):\n    out.zero_()\n"
    )
    result = import_cacheon(src, tmp_path / "out")
    assert not any(c.field == "adapter" for c in result.changes)
    assert load_bundle(tmp_path / "out").ops[0].entry.source == "kernels/attention_decode.py"


def test_the_adapter_never_overwrites_a_bundle_file(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "sdpa_torch", src)
    (src / "kernels" / "attention_hotfloat.py").write_text("TAKEN = True\n")
    import_cacheon(src, tmp_path / "out")
    bundle = load_bundle(tmp_path / "out")
    assert bundle.ops[0].entry.source == "kernels/attention_hotfloat2.py"
    assert bundle.files["kernels/attention_hotfloat.py"] == b"TAKEN = True\n"
    meta = json.loads(bundle.files["metadata/attention.json"])
    assert meta == {"graph_safe": False}


def test_a_cacheon_moe_pair_imports_with_its_prepare_run_every_call_and_verifies(tmp_path):
    result = import_cacheon(FIXTURES / "moe_torch", tmp_path / "out")
    changes = {(c.file, c.field, c.was): c.now for c in result.changes}
    assert changes[("manifest.toml", "ops[0].prepare", "layout")].startswith("(removed: kernels/moe_hotfloat.py calls")
    assert changes[("manifest.toml", "ops[0].source", "kernels/moe.py")] == "kernels/moe_hotfloat.py"
    bundle = load_bundle(tmp_path / "out")
    [op] = bundle.ops
    assert (op.entry.slot, op.entry.entry, op.dtypes) == (
        "moe.fused_experts",
        "fused_experts",
        ["fp32", "bf16", "fp16"],
    )
    assert "cacheon.fused_experts(x, topk_ids, topk_weights, cacheon.layout(w13, w2), out)" in (
        bundle.files["kernels/moe_hotfloat.py"].decode()
    )
    assert scan_bundle(bundle).clean
    assert _verify(tmp_path / "out") is Status.PASS


def test_a_moe_pair_that_mixes_up_gate_and_up_imports_and_fails_verify(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "moe_torch", src)
    kernel = src / "kernels" / "moe.py"
    kernel.write_text(kernel.read_text().replace('"up": w13[:, inter:]', '"up": w13[:, :inter]'))
    import_cacheon(src, tmp_path / "out")
    assert _verify(tmp_path / "out") is Status.FAIL


def test_the_reduce_pair_with_cacheons_default_prepare_verifies_on_two_ranks(tmp_path):
    from hotfloat.collective import verify_collective

    result = import_cacheon(FIXTURES / "moe_reduce_torch", tmp_path / "out")
    assert result.world_size == 2
    assert any(c.field == "ops[0].prepare" and c.was.startswith("(absent") for c in result.changes)
    report = verify_collective(load_bundle(tmp_path / "out"), world_size=2, dtypes=["bf16"], seed=5, timeout_s=120)
    assert report.status is Status.PASS, report.reasons


def test_a_moe_entry_without_its_prepare_is_refused_naming_it(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "moe_torch", src)
    manifest = src / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('prepare = "layout"', 'prepare = "relayout"'))
    with pytest.raises(InputError, match="defines no 'relayout'") as e:
        import_cacheon(src, tmp_path / "out")
    assert "moe.fused_experts" in str(e.value) and "\n" not in str(e.value)


def test_a_moe_entry_already_on_hotfloats_call_is_kept_as_written(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "moe_torch", src)
    (src / "kernels" / "moe.py").write_text(
        "def fused_experts(x, topk_ids, topk_weights, w13, w2, out):\n    out.zero_()\n"
    )
    manifest = src / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('prepare = "layout"\n', ""))
    import_cacheon(src, tmp_path / "out")
    [op] = load_bundle(tmp_path / "out").ops
    assert (op.entry.source, op.entry.entry) == ("kernels/moe.py", "fused_experts")

"""The reference engine: seam-patched model equals the plain transformers model; routing reaches the bundle."""

import torch

from hotfloat.engine.transformers_engine import PRESETS, build_engine, serve_batch
from hotfloat.seams import arm


def test_patched_engine_matches_plain_transformers_model():
    import transformers

    engine = build_engine("tiny", "fp32", "cpu", 0, arm(None))
    shape = {k: v for k, v in PRESETS["tiny"].items() if k != "arch"}
    cfg = transformers.Qwen2Config(**shape, max_position_embeddings=4096, rms_norm_eps=1e-6)
    plain = transformers.Qwen2ForCausalLM(cfg).eval()
    sd = {}
    for k, v in engine.model.state_dict().items():
        if k.endswith("mlp.gate_up.weight"):
            g, u = v.chunk(2)
            sd[k.replace("gate_up", "gate_proj")], sd[k.replace("gate_up", "up_proj")] = g, u
        else:
            sd[k] = v
    plain.load_state_dict(sd)
    ids = torch.randint(1, 512, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a = engine.model(input_ids=ids).logits
        b = plain(input_ids=ids).logits
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_weights_are_seeded_and_identity_is_stable():
    a = build_engine("tiny", "fp32", "cpu", 7, arm(None))
    b = build_engine("tiny", "fp32", "cpu", 7, arm(None))
    assert a.identity == b.identity
    for (_, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items(), strict=False):
        assert torch.equal(x, y)
    assert build_engine("tiny", "fp32", "cpu", 8, arm(None)).identity != a.identity


def test_serve_batch_reports_each_request_when_it_finishes(bundles):
    router = arm(str(bundles["exact"]))
    engine = build_engine("tiny-llama", "fp32", "cpu", 0, router)
    done = []
    n = serve_batch(engine, [[5, 6, 7], [8] * 9], [3, 5], lambda i, t, lp, m: done.append((i, len(t), len(lp), len(m))))
    assert n == 8 and done == [(0, 3, 3, 3), (1, 5, 5, 5)]
    counts = router.counts()
    assert counts["activation.silu_and_mul"].routed > 0 and counts["norm.rmsnorm"].stock > 0

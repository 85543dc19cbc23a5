"""The workload: fixed shapes, prompts per pass from the seed, warm-up prompts disjoint from timed ones."""

from hotfloat.qualify.workload import SHAPES, make_workload, prompts


def test_shapes_cover_prefill_and_decode_heavy_requests():
    for name in SHAPES:
        kinds = {r.kind for b in make_workload(name, 512, seed=0).batches for r in b}
        assert kinds == {"prefill", "decode"}


def test_prompts_follow_the_seed_and_the_shapes():
    w = make_workload("tiny", 512, seed=3)
    a = prompts(w, 0, 1)
    assert a == prompts(make_workload("tiny", 512, seed=3), 0, 1)
    assert [len(p) for p in a] == [r.prompt_len for r in w.batches[1]]
    assert all(1 <= t < 512 for p in a for t in p)
    assert a != prompts(make_workload("tiny", 512, seed=4), 0, 1)


def test_every_pass_and_the_warmup_draw_fresh_prompts():
    w = make_workload("tiny", 512, seed=3)
    assert prompts(w, 0, 0) != prompts(w, 1, 0) != prompts(w, -1, 0)


def test_default_seed_is_secret_and_fresh():
    assert make_workload("tiny", 512).seed != make_workload("tiny", 512).seed


def test_the_kv_cap_holds_the_largest_batch_with_room_to_spare():
    """SGLang engines get exactly this KV pool: too small and requests would queue, changing the timed passes."""
    from hotfloat.qualify.workload import kv_cap

    for shapes in SHAPES:
        w = make_workload(shapes, 1000, seed=1)
        need = max(sum(r.prompt_len + r.max_new_tokens for r in b) for b in w.batches)
        assert kv_cap(w) >= 1.25 * need + 4096 - 1

"""The coordinated arm check across real gloo ranks: all arm the same bundle, or every rank aborts."""

import multiprocessing as mp

import pytest

from hotfloat.seams import RankMismatchError, check_ranks_armed

A = "a" * 64
SCENARIOS = {
    "same": ([A, A], [None, None]),
    "one-failed": ([A, None], [None, "import failed"]),
    "mixed-null": ([A, None], [None, None]),
}


def _rank(rank, init, results):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        for name, (armed, error) in SCENARIOS.items():
            try:
                results.put((name, rank, "ok", check_ranks_armed(armed[rank], error=error[rank])))
            except RankMismatchError as e:
                results.put((name, rank, "abort", str(e)))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    init = f"file://{tmp_path_factory.mktemp('store')}/store"
    procs = [ctx.Process(target=_rank, args=(r, init, results)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=90) for _ in range(2 * len(SCENARIOS))]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return {(name, rank): (kind, detail) for name, rank, kind, detail in got}


def test_all_ranks_same_bundle_pass(outcomes):
    assert outcomes["same", 0] == outcomes["same", 1] == ("ok", [A, A])


def test_one_rank_failing_to_load_aborts_every_rank(outcomes):
    assert outcomes["one-failed", 0][0] == outcomes["one-failed", 1][0] == "abort"
    assert "rank 1: load-failed: import failed" in outcomes["one-failed", 0][1]


def test_mixed_null_and_armed_ranks_abort(outcomes):
    assert outcomes["mixed-null", 0][0] == outcomes["mixed-null", 1][0] == "abort"
    assert "rank 1: null-armed" in outcomes["mixed-null", 0][1]


def test_single_process_check():
    assert check_ranks_armed("b" * 64) == ["b" * 64]
    with pytest.raises(RankMismatchError, match="load-failed: boom"):
        check_ranks_armed(None, error="boom")

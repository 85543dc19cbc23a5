"""The fleet's own jobs beside the rounds loop (which tests/qualify/test_protocol.py runs): filling the validator's warm JIT
caches from a stock engine, file by file, once per machine."""

import os

from hotfloat.qualify import QualifyOptions
from hotfloat.qualify.fleet import Fleet
from hotfloat.qualify.workload import make_workload

OPTS = QualifyOptions.for_device("cpu", seed=3, warmup_passes=0)


class _Engine:
    name = "B1"

    def __init__(self, workdir):
        self.workdir = workdir

    def pids(self):
        return [(1 << 22) + 1]  # above any pid_max: no such process

    def close(self):
        pass

    lifetime_s = 0.0


def test_a_stock_engines_caches_warm_the_validators_once_and_a_missing_cache_is_said(tmp_path, monkeypatch):
    monkeypatch.setenv("HOTFLOAT_ENGINE_ROOT", str(tmp_path / "root"))
    engine = _Engine(tmp_path / "engine")
    (engine.workdir / "cache" / "triton" / "k").mkdir(parents=True)
    (engine.workdir / "cache" / "triton" / "k" / "kernel.cubin").write_bytes(b"x")
    (engine.workdir / "cache" / "link").symlink_to("triton/k/kernel.cubin")
    unsandboxed = OPTS.model_copy(update={"sandboxed": False})
    with Fleet(OPTS.engine(), make_workload("tiny", 512, seed=1), unsandboxed) as fleet:
        fleet.engines["B1"] = engine
        said = fleet.warm_caches("B1")
        warm = tmp_path / "root" / "cache"
        assert said == f"warm caches: 2 files of B1's in {warm}"
        assert (warm / "triton" / "k" / "kernel.cubin").read_bytes() == b"x" and (warm / "link").is_symlink()
        assert not [p for p in warm.rglob(".*") if p.name != ".filled"], "a temporary name was left behind"
        assert fleet.warm_caches("B1") == "warm caches: already filled"
    with Fleet(OPTS.engine(), make_workload("tiny", 512, seed=1), OPTS) as fleet:
        fleet.engines["B1"] = engine
        assert "has no cache" in fleet.warm_caches("B1", tmp_path / "elsewhere")  # sandboxed: only through /proc


def test_warm_caches_keep_each_files_modification_time_so_ninja_builds_stay_clean(tmp_path, monkeypatch):
    """A seeded engine's tvm-ffi and FlashInfer modules are ninja builds: a source copied with a fresh time looks newer
    than the build log's entry for its object, and ninja compiles the module again (20-40 s a module on the H100)."""
    monkeypatch.setenv("HOTFLOAT_ENGINE_ROOT", str(tmp_path / "root"))
    engine = _Engine(tmp_path / "engine")
    build = engine.workdir / "cache" / "tvm-ffi" / "sgl_kernel_jit_norm_0123"
    build.mkdir(parents=True)
    built = {"main.cpp": 1_000_000_000_123_456_789, "main.o": 1_000_000_100_000_000_001, ".ninja_log": 1_000_000_100_5}
    for name, ns in built.items():
        (build / name).write_bytes(name.encode())
        os.utime(build / name, ns=(ns, ns))
    unsandboxed = OPTS.model_copy(update={"sandboxed": False})
    with Fleet(OPTS.engine(), make_workload("tiny", 512, seed=1), unsandboxed) as fleet:
        fleet.engines["B1"] = engine
        fleet.warm_caches("B1")
    warm = tmp_path / "root" / "cache" / "tvm-ffi" / build.name
    assert {n: (warm / n).stat().st_mtime_ns for n in built} == built

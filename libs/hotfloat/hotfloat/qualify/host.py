"""Where qualification engines run: one sandbox per resident engine, and the staged bundles they arm.

Each engine (B, C, B') is one `python -m hotfloat.engine.worker` started through `hotfloat.sandbox.spawn` in
its own sandbox: its own pid, IPC, network and mount namespaces, a private /tmp and /dev (so engines cannot see, signal,
trace or share memory with each other or with the validator), no network, system and Python runtime read-only, the
hotfloat packages read-only at /hotfloat-lib, the staged bundles read-only at /bundles, the validator's model
read-only at /model, an allowlisted environment (no secrets), and bounded processes, memory and CPU time. The
engine's channel is one end of a socketpair on its fd 0, so no socket path is shared. Killing the sandbox at the
end of the qualification ends everything the engine started; nothing it wrote outlives it.

The SGLang runtime lives outside the system directories (the device payload): the directories the validator's
PYTHONPATH, LD_LIBRARY_PATH and CUDA_HOME name (and PATH entries inside the payload or CUDA_HOME) are bound read-only at the same paths, and JIT caches the
validator has already filled ($HOTFLOAT_ENGINE_ROOT/cache) are bound read-only at /warm-cache, copied into the engine's
private /tmp/cache before any candidate code runs (so one engine's compiled kernels can never reach another).

Bundles are staged in one process-wide directory whose root the sandbox cannot list (mode 0311, and the sandbox
has no capability to override it), each qualification under 128 random bits, so an engine can reach the bundles it
was told to arm and not another qualification's.
"""

from __future__ import annotations

import atexit
import os
import resource
import secrets
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..bundle import Bundle
from ..sandbox import Bind, GiB, SandboxPolicy, SandboxedProcess, child_env, spawn
from ..sandbox.mounts import SYSTEM_DIRS, python_runtime_dirs

PACKAGE = Path(__file__).resolve().parents[1]
LIB, BUNDLES, MODEL, WARM_CACHE, CACHE = "/hotfloat-lib", "/bundles", "/model", "/warm-cache", "/tmp/cache"
ENGINE_CPU_S = 4 * 3600
"""RLIMIT_CPU per engine process: a resident engine lives for a whole qualification."""
PASSTHROUGH = (
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "TRITON_PTXAS_PATH",
    "CPATH",
    "LIBRARY_PATH",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TOKENIZERS_PARALLELISM",
    "TVM_FFI_CACHE_DIR",
    "NCCL_CUMEM_ENABLE",
    "NCCL_NVLS_ENABLE",
    "DO_NOT_TRACK",
    "HOTFLOAT_STACK_SAMPLES",
)
PREFIXES = ("FLASHINFER_", "SGLANG_", "SGL_")
"""Environment the engine runtime needs from the validator's (set by tools/device/helpers/sglang_env.sh on the device)."""
ENV_ROOT = "HOTFLOAT_ENGINE_ROOT"
"""Where the engine_install recipe (tools/device/recipes/engine_install.sh) unpacked the SGLang payload; bound read-only, its cache/ warms the engines'."""


def engine_policy(device: str, kind: str) -> SandboxPolicy:
    """The bounds of one engine sandbox. SGLang runs three processes (engine, scheduler, detokenizer) with many
    threads each and JIT-compiles into /tmp; /dev is the engine's own, so it may be writable (shared memory)."""
    cuda = device == "cuda"
    return SandboxPolicy(
        gpu=cuda,
        address_space_bytes=None if cuda else 16 * GiB,
        memory_bytes=(40 if cuda else 8) * GiB,
        cpu_seconds=ENGINE_CPU_S,
        max_processes=2048 if kind == "sglang" else 256,
        max_open_files=_nofile(65536 if kind == "sglang" else 1024),
        tmp_bytes=(8 if kind == "sglang" else 1) * GiB,
        writable_dev=True,
    )


def _nofile(want: int) -> int:
    """RLIMIT_NOFILE the engine asks for, within what this process may grant."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return want if hard == resource.RLIM_INFINITY else min(want, hard)


def _outside_system(path: str) -> bool:
    real = os.path.realpath(path)
    covered = (*SYSTEM_DIRS, *python_runtime_dirs())
    return os.path.isdir(real) and not any(real == d or real.startswith(d.rstrip("/") + "/") for d in covered)


def runtime_view(kind: str, environ: dict[str, str] | None = None) -> tuple[list[Bind], dict[str, str]]:
    """Binds and environment that give the engine the validator's engine runtime, without the validator's secrets.

    PYTHONPATH entries inside this checkout or holding a hotfloat package are left out: the engine gets its own
    read-only view of the packages it needs at LIB, and nothing else of the validator's tree."""
    environ = dict(os.environ if environ is None else environ)
    binds: dict[str, Bind] = {}
    env: dict[str, str] = {}
    repo = str(PACKAGE.parents[2]).rstrip("/") + "/"
    path_entries = [
        p
        for p in environ.get("PYTHONPATH", "").split(os.pathsep)
        if p and not (os.path.realpath(p) + "/").startswith(repo) and not os.path.isdir(os.path.join(p, "hotfloat"))
    ]
    if kind == "sglang":
        names = [k for k in environ if k in PASSTHROUGH or k.startswith(PREFIXES)]
        root = environ.get(ENV_ROOT)
        cache = f"{root.rstrip('/')}/cache" if root else None
        for k in names:
            v = environ[k]
            if cache and v.startswith(cache.rstrip("/")):
                v = CACHE + v[len(cache.rstrip("/")) :]
            env[k] = v
        tools = [
            p
            for p in environ.get("PATH", "").split(os.pathsep)
            if p
            and any(h and (p.rstrip("/") + "/").startswith(h.rstrip("/") + "/") for h in (root, env.get("CUDA_HOME")))
        ]
        # SGLang's and FlashInfer's JIT kernels build with ninja, which pip installs beside the runtime's python.
        if (ninja := shutil.which("ninja", path=environ.get("PATH"))) and os.path.dirname(ninja) not in tools:
            tools.append(os.path.dirname(ninja))
        dirs = [
            *path_entries,
            *env.get("LD_LIBRARY_PATH", "").split(os.pathsep),
            env.get("CUDA_HOME", ""),
            env.get("CUDA_PATH", ""),
            *tools,
        ]
        for d in dirs:
            if d and not d.startswith(CACHE) and _outside_system(d):
                binds.setdefault(d, Bind(Path(d), d))
        if root and os.path.isdir(root):
            binds = {d: b for d, b in binds.items() if not (d + "/").startswith(root.rstrip("/") + "/")}
            binds[root] = Bind(Path(root), root)
        if cache and os.path.isdir(cache):
            binds[WARM_CACHE] = Bind(Path(cache), WARM_CACHE)
        env["PATH"] = os.pathsep.join([*tools, "/usr/local/bin", "/usr/bin", "/bin"])
    env["PYTHONPATH"] = os.pathsep.join([LIB, *(path_entries if kind == "sglang" else [])])
    return list(binds.values()), env


def model_view(model_dir: str | None, *, sandboxed: bool) -> str | None:
    """Where the engine finds the validator's model: bound at MODEL in the sandbox, the host path without one."""
    return None if model_dir is None else (MODEL if sandboxed else model_dir)


def lib_dir() -> Path:
    """The hotfloat packages the engine imports, read-only: hotfloat, hotfloat_sglang and the entry-point metadata
    SGLang's plugin loader looks for (so the plugin loads whether or not a payload installed it)."""
    with _LOCK:
        if not _LIBS:
            root = Path(tempfile.mkdtemp(prefix="hotfloat-lib-"))
            (root / "hotfloat").symlink_to(PACKAGE)
            # beside hotfloat where both are installed (the worker image), else in the checkout's libs/
            plugin = next(
                (
                    p
                    for p in (
                        PACKAGE.parent / "hotfloat_sglang",
                        PACKAGE.parents[1] / "hotfloat_sglang" / "hotfloat_sglang",
                    )
                    if p.is_dir()
                ),
                None,
            )
            if plugin is not None:
                (root / "hotfloat_sglang").symlink_to(plugin)
                info = root / "hotfloat_sglang_qualify-0.dist-info"
                info.mkdir()
                (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hotfloat-sglang-qualify\nVersion: 0\n")
                (info / "entry_points.txt").write_text(
                    "[sglang.srt.plugins]\nhotfloat = hotfloat_sglang.plugin:activate\n"
                )
            _LIBS.append(root)
            atexit.register(shutil.rmtree, root, True)
        return _LIBS[0]


def spawn_engine(
    device: str, kind: str, *, sandboxed: bool, model_dir: str | None, conn_fd: int, log_path: Path, workdir: Path
) -> SandboxedProcess:
    """Starts one engine worker serving the socket `conn_fd` (its fd 0)."""
    binds, extra = runtime_view(kind)
    extra.update({"TRITON_INTERPRET": "1"} if device == "cpu" else {})
    if sandboxed:
        home = "/tmp"
        lib = lib_dir()
        binds = [*binds, Bind(_stage_root(), BUNDLES), *(Bind(p.resolve(), f"{LIB}/{p.name}") for p in lib.iterdir())]
        if model_dir:
            binds.append(Bind(Path(model_dir), MODEL))
    else:
        home = str(workdir)
        extra["PYTHONPATH"] = os.pathsep.join([str(lib_dir()), *filter(None, [os.environ.get("PYTHONPATH")])])
        if kind == "sglang":  # the validator's own runtime view, caches included (nothing to copy)
            extra.update({k: v for k, v in os.environ.items() if k.startswith(PREFIXES) or k in PASSTHROUGH})
            extra["PATH"] = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    extra.update(
        TRITON_CACHE_DIR=f"{home}/cache/triton",
        TORCHINDUCTOR_CACHE_DIR=f"{home}/cache/inductor",
        XDG_CACHE_HOME=f"{home}/cache",
        HOTFLOAT_WORKER_HOME=home,
    )
    argv = [sys.executable, "-m", "hotfloat.engine.worker"]
    with open(log_path, "wb") as log:
        return spawn(
            argv,
            engine_policy(device, kind),
            sandboxed=sandboxed,
            binds=binds,
            env=child_env(extra, home=home),
            cwd=str(workdir),
            stdin=conn_fd,
            stdout=log,
        )


_LIBS: list[Path] = []
_LOCK = threading.Lock()


@contextmanager
def staged(bundles: dict[str, Bundle], *, sandboxed: bool) -> Iterator[dict[str, str]]:
    """Writes the bundles under a fresh unguessable directory; yields name -> path as the engines see it."""
    token = secrets.token_hex(16)
    host = _stage_root() / token
    try:
        for name, bundle in bundles.items():
            for rel, data in bundle.files.items():
                (host / name / rel).parent.mkdir(parents=True, exist_ok=True)
                (host / name / rel).write_bytes(data)
        yield {name: f"{BUNDLES}/{token}/{name}" if sandboxed else str(host / name) for name in bundles}
    finally:
        shutil.rmtree(host, ignore_errors=True)


_STAGE: list[Path] = []


def _stage_root() -> Path:
    with _LOCK:
        if not _STAGE:
            root = Path(tempfile.mkdtemp(prefix="hotfloat-bundles-"))
            root.chmod(0o311)
            _STAGE.append(root)
            atexit.register(_remove_stage, root)
        return _STAGE[0]


def _remove_stage(root: Path) -> None:
    """At exit; whoever owned the temp folder above it may have removed it already."""
    if root.exists():
        root.chmod(0o700)
        shutil.rmtree(root, ignore_errors=True)

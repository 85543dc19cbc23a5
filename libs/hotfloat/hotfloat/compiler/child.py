"""The build child: imports one untrusted kernel source and compiles its declared kernel to cubins, deviceless.

It runs only inside the build sandbox (no network, read-only host, bounded time and memory), reads its request
from `request.json` in the work directory named by its argument, and writes `<dtype>.cubin` files plus `result.json` into its working directory. Everything it
writes is untrusted: the parent re-derives what matters from the cubin itself."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path


def _load(source: Path, entry: str):
    spec = importlib.util.spec_from_file_location(f"hotfloat_candidate_{source.stem}", source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, entry, None)
    if fn is None:
        raise SystemExit(f"{source.name} defines no {entry!r}")
    return fn


def _ptype(t: str, dtype: str) -> str:
    return f"*{dtype}" if t == "*T" else t


def _triton(fn, req: dict, dtype: str) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    decl = req["kernel"]
    names = [p["name"] for p in decl["params"]]
    if not isinstance(fn, triton.runtime.JITFunction):
        raise SystemExit(f"{req['entry']} is not a @triton.jit function")
    runtime = [a for a in fn.arg_names if a not in decl["constexprs"]]
    if runtime != names:
        raise SystemExit(f"{req['entry']} takes {runtime}, but the manifest declares {names}")
    signature = {p["name"]: _ptype(p["type"], dtype) for p in decl["params"]}
    signature.update({c: "constexpr" for c in decl["constexprs"]})
    arch = int(req["arch"].removeprefix("sm_").rstrip("a"))
    kernel = triton.compile(
        ASTSource(fn=fn, signature=signature, constexprs=dict(decl["constexprs"])),
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": decl["block"] // 32},
    )
    md = kernel.metadata
    if (
        md.num_ctas != 1
        or md.launch_cooperative_grid
        or md.launch_pdl
        or md.global_scratch_size
        or md.profile_scratch_size
    ):
        raise SystemExit(
            "the kernel needs clusters, cooperative/PDL launch or scratch memory, which admission does not provide"
        )
    return {"symbol": md.name, "shared": md.shared, "cubin": kernel.asm["cubin"]}


def _cute(fn, req: dict, dtype: str, dump: Path) -> dict:
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    elems = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16, "fp32": cutlass.Float32}
    scalars = {"i32": cutlass.Int32(1), "i64": cutlass.Int64(1), "fp32": cutlass.Float32(1.0)}
    args = []
    for p in req["kernel"]["params"]:
        t = _ptype(p["type"], dtype)
        args.append(make_ptr(elems[t[1:]], 16, cute.AddressSpace.gmem, assumed_align=16) if t[0] == "*" else scalars[t])
    for old in dump.glob("*.cubin"):
        old.unlink()
    compiled = cute.compile(fn, *args, **req["kernel"]["constexprs"])
    cubins = list(dump.glob("*.cubin"))
    if len(cubins) != 1:
        raise SystemExit(f"cute.compile left {len(cubins)} cubins, expected 1")
    symbols = list(compiled.kernel_info)
    return {"symbol": symbols[0] if len(symbols) == 1 else symbols, "shared": 0, "cubin": cubins[0].read_bytes()}


def main() -> None:
    work = Path(sys.argv[1])
    req = json.loads((work / "request.json").read_text())
    fn = _load(work / req["source"], req["entry"])
    dump = work / "dump"
    dump.mkdir(exist_ok=True)
    results = {}
    for dtype in req["dtypes"]:
        built = _triton(fn, req, dtype) if req["kind"] == "triton" else _cute(fn, req, dtype, dump)
        (work / "out" / f"{dtype}.cubin").write_bytes(built.pop("cubin"))
        results[dtype] = built
    (work / "out" / "result.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main()

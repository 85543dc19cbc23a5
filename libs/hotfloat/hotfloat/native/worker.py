"""The admission worker: loads validator-built cubins through the CUDA Driver API, asserts each library holds exactly
the declared kernel with the declared parameter layout, launches it on fresh seeded inputs and checks the output
against the slot's fp32 reference.

It runs as a sandboxed child of `hotfloat.sandbox.run_child` (the GPU code is the candidate's): the request (artifacts
and seed) comes on stdin, `ready` is said once torch and the CUDA context are up, and the report goes back through
`hotfloat.sandbox.channel`. It needs only torch, cuda-bindings and hotfloat's slots, params and channel modules, so
the same file runs on a bare GPU machine (the native recipe: tools/device/recipes/native.sh)."""

from __future__ import annotations

import ctypes
import time


def _check(result):
    """cuda-bindings returns (CUresult, *values); anything but success becomes an exception with the driver's name."""
    from cuda.bindings import driver

    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"driver call failed: {err.name}")
    return values[0] if len(values) == 1 else values


def _inspect(library) -> dict[str, list[tuple[int, int]]]:
    """Every kernel the driver loaded, with its (offset, size) parameter layout as the driver reports it."""
    from cuda.bindings import driver

    count = _check(driver.cuLibraryGetKernelCount(library))
    found = {}
    for kernel in _check(driver.cuLibraryEnumerateKernels(count, library)):
        name = _check(driver.cuKernelGetName(kernel))
        name = name.decode() if isinstance(name, bytes) else str(name)
        layout = []
        while True:
            err, offset, size = driver.cuKernelGetParamInfo(kernel, len(layout))
            if err != driver.CUresult.CUDA_SUCCESS:
                break
            layout.append((int(offset), int(size)))
        found[name] = layout
    return found


def _launch(library, art: dict, tensors: dict, dims: dict) -> None:
    import torch
    from cuda.bindings import driver

    from hotfloat.native import params

    kernel = _check(driver.cuLibraryGetKernel(library, art["symbol"].encode()))
    values = params.bind(art["param_names"], tensors, dims)
    buf = ctypes.create_string_buffer(params.pack(art["param_types"], art["kind"], values))
    pointers = (ctypes.c_void_p * len(art["layout"]))(*[ctypes.addressof(buf) + off for off, _ in art["layout"]])
    gx, gy, gz = params.grid(art["grid"], dims)
    stream = driver.CUstream(torch.cuda.current_stream().cuda_stream)
    _check(
        driver.cuLaunchKernel(
            driver.CUfunction(int(kernel)),
            gx,
            gy,
            gz,
            art["block"],
            1,
            1,
            art["shared_bytes"],
            stream,
            ctypes.addressof(pointers),
            0,
        )
    )
    torch.cuda.synchronize()


def _verify(library, art: dict, seed: int) -> list[dict]:
    """One row per verification shape: poisoned padded outputs, unchanged inputs, every element within tolerance."""
    import torch

    from hotfloat.slots import DTYPES, Role, get_slot

    slot = get_slot(art["slot"])
    dtype, tol, rows = DTYPES[art["dtype"]], slot.tolerances[art["dtype"]], []
    for i, shape in enumerate(slot.shapes):
        dims = dict(shape.dims)
        gen = torch.Generator().manual_seed(seed + i)
        inputs = {k: v.cuda() for k, v in slot.make_inputs(dims, dtype, gen).items()}
        before = {k: v.clone() for k, v in inputs.items()}
        outs, storage = {}, {}
        for a in slot.of_role(Role.OUTPUT):
            shp = slot.shape_of(a, dims)
            padded = torch.full((*shp[:-1], shp[-1] + 16), float("nan"), dtype=dtype, device="cuda")
            storage[a.name], outs[a.name] = padded, padded[..., : shp[-1]]
        scalars = {a.name: a.default for a in slot.of_role(Role.SCALAR)}
        _launch(library, art, {**inputs, **outs}, dims)
        expected, scales = slot.expect({**{k: v.cpu() for k, v in before.items()}, **scalars})
        problems = [f"input {k} was modified" for k in inputs if not torch.equal(inputs[k], before[k])]
        worst = 0.0
        for name, out in outs.items():
            got, want = out.float().cpu(), expected[name].float()
            if storage[name][..., out.shape[-1] :].isnan().logical_not().any():
                problems.append(f"{name}: wrote past the row into the padding")
            if not torch.isfinite(got).all():
                problems.append(f"{name}: non-finite or unwritten elements")
                continue
            err = (got - want).abs()
            worst = max(worst, float(err.max()))
            if (err > tol.atol + tol.rtol * scales[name]).any():
                problems.append(f"{name}: max error {float(err.max()):.3g} beyond atol={tol.atol:g} rtol={tol.rtol:g}")
        rows.append({"shape": shape.label, "ok": not problems, "max_abs_err": worst, "problems": problems})
    return rows


def admit_one(art: dict, data: bytes, seed: int) -> dict:
    """Loads one cubin, checks names and layout against the declaration, then launches and verifies it."""
    from cuda.bindings import driver

    library = _check(driver.cuLibraryLoadData(data, None, None, 0, None, None, 0))
    try:
        loaded = _inspect(library)
        row = {"cubin": art["cubin"], "loaded": {k: [list(p) for p in v] for k, v in loaded.items()}, "rows": []}
        if list(loaded) != [art["symbol"]]:
            return {**row, "ok": False, "reason": f"loaded kernels {sorted(loaded)} are not exactly [{art['symbol']}]"}
        if loaded[art["symbol"]] != [tuple(p) for p in art["layout"]]:
            return {**row, "ok": False, "reason": f"driver layout {loaded[art['symbol']]} != declared {art['layout']}"}
        row["rows"] = _verify(library, art, seed)
        bad = [r for r in row["rows"] if not r["ok"]]
        reason = f"{bad[0]['shape']}: {'; '.join(bad[0]['problems'])}" if bad else "loaded, launched and verified"
        return {**row, "ok": not bad, "reason": reason}
    finally:
        driver.cuLibraryUnload(library)


def main() -> None:
    import torch
    from cuda.bindings import driver

    from hotfloat.sandbox import channel

    request = channel.request()
    started = time.monotonic()
    torch.cuda.init()
    torch.empty(1, device="cuda")
    _check(driver.cuInit(0))
    channel.ready()
    results = []
    for art in request["artifacts"]:
        with open(art["path"], "rb") as f:
            data = f.read()
        try:
            results.append(admit_one(art, data, request["seed"]))
        except RuntimeError as e:
            results.append({"cubin": art["cubin"], "ok": False, "reason": str(e), "loaded": {}, "rows": []})
    channel.reply({"device": torch.cuda.get_device_name(), "results": results, "elapsed_s": time.monotonic() - started})


if __name__ == "__main__":
    main()

"""The `sglang.srt.plugins` entry point: arm the bundle in this engine process and hook the slot chokepoints.

SGLang calls every installed general plugin in each of its processes (engine, schedulers = one per TP rank,
detokenizer) and logs, then ignores, any exception a plugin raises. A plugin that merely raised would therefore leave
the engine serving the stock path; a failed arm here exits the process instead (SystemExit is not an Exception), and
once torch.distributed is up every rank compares what it armed and all exit unless they agree.

Selected by environment: nothing happens unless HOTFLOAT_SEAMS=1 (set SGLANG_PLUGINS=hotfloat to load only this
plugin). HOTFLOAT_ARMED_BUNDLE / HOTFLOAT_ARMED_IDENTITY name the bundle; without a bundle the engine is null-armed
(all calls stock, still counted). HOTFLOAT_SEAMS_REPORT_DIR, when set, receives one JSON file per process with
the armed identity and the routed/stock counts, written at activation, whenever the counts changed (checked every
0.5 s: SGLang kills its scheduler processes at shutdown, so an exit hook alone would lose them) and at a clean exit.

The same thread serves the qualification worker's requests (hotfloat.qualify.engines.sglang_engine), since the router
lives in the scheduler process: the worker writes `control.json` ({"seq": n, "twin": [slots]} to enable the gate
twin's slots, {"seq": n, "audit": true} to dump the audit as `audit-<pid>.json`/`.bin`); the thread applies a new
seq once, between passes (the engine is idle), and acknowledges it in its report (`applied`, `twin`, `error`).
HOTFLOAT_STACK_SAMPLES starts the boot sampler (hotfloat_sglang.stacks), a device diagnostic.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from hotfloat.seams import SeamRouter, arm_from_env, check_ranks_armed
from hotfloat.seams.audit_dump import write_dump
from hotfloat.errors import HotfloatError

from .chokepoints import NORM_TARGETS, SILU_TARGETS, norm_hook, silu_hook
from . import ar_rmsnorm, decode_attention, moe, prefill_attention, stacks

ENV_ENABLE = "HOTFLOAT_SEAMS"
ENV_REPORT_DIR = "HOTFLOAT_SEAMS_REPORT_DIR"
RANK_CHECK_TARGET = "sglang.srt.distributed.parallel_state.initialize_model_parallel"
REPORT_INTERVAL_S = 0.5
CONTROL = "control.json"
CONTROL_POLL_S = 0.1

log = logging.getLogger("hotfloat.seams")
_router: SeamRouter | None = None
_report_lock = threading.Lock()
_control = {"applied": 0, "error": None}


def router() -> SeamRouter | None:
    """This process's router (None before activation or when the plugin is disabled)."""
    return _router


def abort(message: str) -> None:
    """Ends this engine process loudly; SGLang's launcher then tears the whole engine down."""
    log.critical("hotfloat seams: %s", message)
    print(f"hotfloat seams: FATAL: {message}", file=sys.stderr, flush=True)
    raise SystemExit(f"hotfloat seams: {message}")


def activate() -> None:
    """Entry point: arm from the environment, register the chokepoint hooks, apply them, verify they took."""
    global _router
    if os.environ.get(ENV_ENABLE) != "1" or _router is not None:
        return
    stacks.start()
    try:
        _router = arm_from_env()
    except HotfloatError as e:
        abort(f"the armed bundle failed to load in pid {os.getpid()}: {e}")
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    hooks, after = seam_hooks(_router)
    hooks.append((RANK_CHECK_TARGET, _after_parallel_init))
    after.add(RANK_CHECK_TARGET)
    for target, hook in hooks:
        HookRegistry.register(target, hook, HookType.AFTER if target in after else HookType.AROUND)
    HookRegistry.apply_hooks()
    missing = [t for t, _ in hooks if t not in HookRegistry._patched]
    if missing:
        abort(f"could not hook {', '.join(missing)} (run `hotfloat compat`)")
    _report()
    atexit.register(_report)
    if os.environ.get(ENV_REPORT_DIR):
        threading.Thread(target=_report_changes, name="hotfloat-seams-report", daemon=True).start()


def seam_hooks(router: SeamRouter, every: bool = False) -> tuple[list[tuple[str, object]], set[str]]:
    """(target, hook) for each chokepoint and the targets hooked AFTER (the rest are AROUND). The row-wise slots are
    always hooked; any other seam only when the router routes, nudges or audits its slot, since hooking it imports its
    SGLang module (the triton backend, FlashInfer's fusion, the MoE layer), or when `every` asks for all of them."""
    hooks = [(t, silu_hook(router)) for t in SILU_TARGETS] + [(t, norm_hook(router)) for t in NORM_TARGETS]
    after = set()
    for seam in (decode_attention, prefill_attention):
        if every or seam.SLOT in router.hooked:
            hooks.append((seam.TARGET, seam.backend_init_hook(router)))
            after.add(seam.TARGET)
    if every or ar_rmsnorm.SLOT in router.hooked:
        hooks.append((ar_rmsnorm.TARGET, ar_rmsnorm.hook(router)))
    if every or {moe.SLOT, moe.REDUCE_SLOT} & router.hooked:
        hooks.append((moe.TARGET, moe.hook(router)))
    return hooks, after


def _after_parallel_init(result, *args, **kwargs):
    """After SGLang built its process groups: every rank must have armed the same bundle (else all ranks exit)."""
    from sglang.srt.distributed.parallel_state import get_world_group

    try:
        check_ranks_armed(_router.identity if _router else None, group=get_world_group().cpu_group)
    except HotfloatError as e:
        abort(str(e))
    return result


def _report_changes() -> None:
    last, ticks = None, 0
    while True:
        time.sleep(CONTROL_POLL_S)
        ticks += 1
        acted = serve_control()
        if acted or ticks % round(REPORT_INTERVAL_S / CONTROL_POLL_S) == 0:
            now = _router.counts()
            if acted or now != last:
                _report()
                last = now


def serve_control() -> bool:
    """Applies the worker's latest request once (a new `seq` in control.json); True when it did."""
    directory = Path(os.environ[ENV_REPORT_DIR])
    try:
        request = json.loads((directory / CONTROL).read_text())
        seq = int(request["seq"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if seq <= _control["applied"]:
        return False
    try:
        if "twin" in request:
            _router.set_twin_slots(set(request["twin"]))
        if request.get("audit"):
            write_dump(directory / f"audit-{os.getpid()}", _router.audit.dump() if _router.audit else [])
        _control["error"] = None
    except Exception as e:  # reported to the worker, which fails the engine with it
        _control["error"] = f"{type(e).__name__}: {e}"[:500]
    _control["applied"] = seq
    return True


def _report() -> None:
    directory = os.environ.get(ENV_REPORT_DIR)
    if not directory or _router is None:
        return
    counts = {slot: asdict(c) for slot, c in _router.counts().items()}
    path = Path(directory) / f"seams-{os.getpid()}.json"
    with _report_lock:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "identity": _router.identity,
                    "counts": counts,
                    "twin": sorted(_router.twin_slots),
                    **_control,
                }
            )
        )
        tmp.replace(path)

"""The `sglang.srt.plugins` entry point: arm the bundle in each SGLang scheduler process and hook the slot chokepoints.

SGLang calls every installed general plugin in its engine process and in each scheduler (one per TP rank), and logs,
then ignores, any exception a plugin raises. A plugin that merely raised would therefore leave the engine serving the
stock path; a failed arm here exits the process instead (SystemExit is not an Exception), and once torch.distributed
is up every rank compares what it armed and all exit unless they agree.

Selected by environment: nothing happens unless HOTFLOAT_SEAMS=1 (set SGLANG_PLUGINS=hotfloat to load only this
plugin). HOTFLOAT_ARMED_BUNDLE / HOTFLOAT_ARMED_IDENTITY name the bundle; without a bundle the engine is null-armed
(all calls stock, still counted). The host process that boots SGLang (hotfloat.seams.control: the qualification
worker, the live tier's runner) opens the control channel and is never armed: candidate code runs in the schedulers
alone. A scheduler connects to the channel before it imports candidate code, takes its settings from it (the audit's
secret key never passes through the environment) and answers the host's requests on it from a thread: the twin's
slots, the seam counts, the audit of the round that ended (the engine is idle between passes).
HOTFLOAT_STACK_SAMPLES starts the boot sampler (hotfloat_sglang.stacks), a device diagnostic.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import asdict

from hotfloat.audit.config import AuditConfig
from hotfloat.errors import HotfloatError
from hotfloat.seams import ENV_ATTENTION, SeamRouter, arm_from_env, check_ranks_armed
from hotfloat.seams.audit import Auditor
from hotfloat.seams.control import ENV_CONTROL, ENV_OWNER, ControlError, connect, serve

from . import stacks
from .seams import registry

ENV_ENABLE = "HOTFLOAT_SEAMS"
RANK_CHECK_TARGET = "sglang.srt.distributed.parallel_state.initialize_model_parallel"

log = logging.getLogger("hotfloat.seams")
_router: SeamRouter | None = None


def router() -> SeamRouter | None:
    """This process's router (None before activation, when the plugin is disabled, or in the host process)."""
    return _router


def abort(message: str) -> None:
    """Ends this engine process loudly; SGLang's launcher then tears the whole engine down."""
    log.critical("hotfloat seams: %s", message)
    print(f"hotfloat seams: FATAL: {message}", file=sys.stderr, flush=True)
    raise SystemExit(f"hotfloat seams: {message}")


def activate() -> None:
    """Entry point: in a scheduler, open the control channel, arm with its settings, register the chokepoint
    hooks, apply them, verify they took, and serve the host's requests. SGLang logs and ignores an exception a
    plugin raises, which would leave the engine serving stock: any failure here ends the process instead."""
    if os.environ.get(ENV_ENABLE) != "1" or _router is not None or os.environ.get(ENV_OWNER) == str(os.getpid()):
        return
    try:
        _activate()
    except SystemExit:
        raise
    except Exception as e:  # never formatted: it may come from candidate code
        abort(f"activation failed in pid {os.getpid()} with {type(e).__name__}")


def _activate() -> None:
    stacks.start()
    conn = arm_scheduler()
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
    if conn is not None:
        threading.Thread(target=serve, args=(conn, handle), name="hotfloat-control", daemon=True).start()


def arm_scheduler():
    """Opens the host's control channel (when HOTFLOAT_CONTROL names one), takes the settings from it, and only then
    imports the bundle; returns the channel (None without one). Any failure ends the process."""
    global _router
    conn, settings = None, {}
    if os.environ.get(ENV_CONTROL):
        try:
            conn, settings = connect(os.environ[ENV_CONTROL], {"pid": os.getpid()})
        except (OSError, ControlError) as e:
            abort(f"pid {os.getpid()} could not open the host's control channel: {e}")
    audit = AuditConfig.from_wire(settings.get("audit"))
    if audit is not None and settings.get("dtype"):
        try:
            Auditor(audit).warm(settings["dtype"])  # the taps compiled before the bundle is imported
        except Exception as e:  # our own kernels: the message is ours
            abort(f"the audit's kernels failed to compile in pid {os.getpid()}: {type(e).__name__}: {str(e)[:300]}")
    try:
        _router = arm_from_env(audit=audit)
    except HotfloatError as e:
        abort(f"the armed bundle failed to load in pid {os.getpid()}: {e}")
    return conn


def handle(request: dict) -> tuple[dict, bytes]:
    """One request of the host: `twin` (enable those slots' nudge), `counts` (routed and stock calls per slot, and
    the armed identity), `audit` (the round's strata and kept entries, their sealed words as data)."""
    op = request.get("op")
    if op == "twin":
        return {"twin": sorted(_router.set_twin_slots(set(request.get("slots", ()))))}, b""
    if op == "counts":
        counts = {slot: asdict(c) for slot, c in _router.counts().items()}
        return {"identity": _router.identity, "counts": counts}, b""
    if op == "audit":
        if _router.audit is None:
            return {"strata": [], "entries": [], "unaudited": {}, "error": None}, b""
        dump = _router.audit.dump()
        heads = [{**h, "words": len(d) // 8} for h, d in dump["entries"]]
        header = {"strata": dump["strata"], "entries": heads, "unaudited": dump["unaudited"], "error": dump["error"]}
        return header, b"".join(d for _, d in dump["entries"])
    raise ValueError(f"unknown request {str(op)[:40]!r}")


def seam_hooks(router: SeamRouter, every: bool = False) -> tuple[list[tuple[str, object]], set[str]]:
    """(target, hook) for each target of the seams this engine needs, and the targets hooked AFTER (the rest are
    AROUND): a seam is hooked when it is `always` hooked or its router routes, nudges or audits one of its slots
    (hooking imports its SGLang module: the triton backend, FlashInfer's fusion, the MoE layer), or when `every` asks
    for all of them; a backend's seams only in an engine on that attention backend (HOTFLOAT_ATTENTION_BACKEND, set
    by the host; unset: every backend's)."""
    backend = os.environ.get(ENV_ATTENTION) or None
    hooks, after = [], set()
    for seam in registry():
        if seam.wanted(router.hooked, every, backend):
            hook = seam.hook(router)
            hooks += [(t, hook) for t in seam.targets]
            after |= set(seam.targets) if seam.after else set()
    return hooks, after


def _after_parallel_init(result, *args, **kwargs):
    """After SGLang built its process groups: every rank must have armed the same bundle (else all ranks exit)."""
    from sglang.srt.distributed.parallel_state import get_world_group

    try:
        check_ranks_armed(_router.identity if _router else None, group=get_world_group().cpu_group)
    except HotfloatError as e:
        abort(str(e))
    return result

"""`qualify_bundle`: the complete-engine A/B of one candidate, as the CLI and the Qualification service call it.

Protocol: three resident engines, B, C and B' (B' the same stock engine as B in a third process), each booted once
in its own sandbox and warmed up; then rounds, each serving one pass of the workload on every engine in an order
drawn from the secret seed, on prompts drawn fresh for that round. Every `look_rounds` rounds the gate and the rule
look at what was served and the loop stops at the first decision or when the budget is spent; then the engines
report their seam counts and `judge` (the function a recompute replays) gives the verdict. A fourth engine, the
gate's twin T (B with the candidate's slots one ulp off, hotfloat.qualify.gate), boots with them, serves the first
look's prompts before any timed pass and is shut down, so timing runs on three engines exactly as calibrated. The
candidate bundle is armed only in C; without a sandbox, qualification refuses to run unless the caller opts out
with `sandboxed=False`, which the evidence records.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import os
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..bundle import Bundle, load_bundle
from ..errors import InfrastructureError
from ..sandbox import ensure_available
from .decision import judge
from .presets import PRESETS
from .gate import gate
from .host import engine_policy, model_view, staged
from .records import Decision, Decode, EngineKind, EngineSpec, Evidence, QualifyResult, Record, Role, RuleConfig, RunFrame
from .resident import EngineFault, ResidentEngine, alone, cpu_sets, harden_self
from .rule import decide
from .workload import SHAPES, kv_cap, make_workload, prompts

Progress = Callable[[str, int, int], None]
"""progress(description, rounds done, most rounds possible)."""


class QualifyOptions(Record):
    """What the validator chooses for a qualification; the candidate chooses none of it. Defaults follow the device:
    `for_device` fills them in (the CLI and the services call it), so a caller names only what it changes."""

    engine_kind: EngineKind = "transformers"
    """"sglang" (CUDA) or the transformers stand-in."""
    preset: str = "tiny"
    """Engine model preset (hotfloat.qualify.engine.PRESETS)."""
    model_path: str | None = None
    """SGLang only: a checkpoint directory instead of a generated model."""
    device: Literal["cpu", "cuda"] = "cpu"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    decode: Decode | None = None
    """Decode mode of B and C alike (EngineSpec.decode); None: CUDA graphs on CUDA, eager on CPU."""
    shapes: str = "tiny"
    """Workload request mix (hotfloat.qualify.workload.SHAPES)."""
    warmup_passes: Annotated[int, Field(ge=0, le=16)] = 1
    seed: int | None = None
    """Workload prompt seed; None draws a secret one."""
    rule: RuleConfig = RuleConfig(logprob_tol=1e-3)
    sandboxed: bool = True
    """Engine processes run in the candidate sandbox and qualification fails closed without one; False (logged
    as a warning, recorded in the evidence) runs them with the validator's files, environment and network."""
    startup_timeout_s: Annotated[float, Field(gt=0)] = 900.0
    """Boot, arm, warm-up and graph capture of all three engines must finish within this."""
    batch_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    threads: Annotated[int, Field(ge=1, le=256)] = 1
    """CPU threads per transformers engine on CPU."""
    mem_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.95
    """SGLang's `mem_fraction_static`, which here only gates its memory profiling: SGLang sizes the KV pool as the
    free memory after its model load minus (1 - fraction) of the free memory before it, and engines booting together
    load in between, so anything lower fails the later engines. What an engine really holds is its weights plus the
    KV pool capped at the workload's need (`max_total_tokens`): about 22 GB for llama-8b, so six fit on an H200."""
    twin: bool = True
    """Boot the gate's twin, whose divergence from B sets how far C may stray; False holds C to `logprob_tol`
    alone (bit-exact kernels only, on a model that amplifies rounding)."""
    extra_passes: dict[Role, Annotated[int, Field(ge=0, le=1024)]] = {}
    """Calibration only (transformers engine): role -> extra stock activation passes per MLP call, a known speed
    difference injected by the validator (e.g. a slower B to exercise the PASS path where nothing is faster)."""

    @model_validator(mode="after")
    def _engine_is_valid(self):
        self.engine()  # e.g. graph decode on CPU is refused here, before any engine process starts
        if self.preset not in PRESETS or self.shapes not in SHAPES:
            raise ValueError(f"unknown preset {self.preset!r} or shapes {self.shapes!r}")
        return self

    def engine(self) -> EngineSpec:
        """The engine B and C both run."""
        return EngineSpec(kind=self.engine_kind, preset=self.preset, model_path=self.model_path, dtype=self.dtype,
                          device=self.device, decode=self.decode)

    @classmethod
    def for_device(cls, device: str, engine_kind: str | None = None, **given) -> QualifyOptions:
        """Options with the device's defaults for whatever is not given: CPU runs the tiny fp32 stand-in; CUDA runs
        SGLang on the Llama-3-8B shape in bf16 with the decode-heavy `sglang` mix and the rule calibrated for it.
        Why 8B: on the H200 a Qwen2-0.5B decode step is bound by the scheduler's Python (GPU 42-83% busy, passes
        5-15% apart), so a faster kernel cannot show and the noise is the host CPU's; an 8B step keeps the GPU 100%
        busy and passes repeat within 0.1-0.7% (tools/device/engine_noise.py, docs/qualification.md)."""
        given = {k: v for k, v in given.items() if v is not None}
        kind = engine_kind or ("sglang" if device == "cuda" else "transformers")
        cpu = device == "cpu"
        dtype = given.pop("dtype", "fp32" if cpu else "bf16")
        tol = given.pop("logprob_tol", 1e-3 if dtype == "fp32" else 0.1)
        rule = {**DEFAULT_RULES[device], **given.pop("rule", {}), "logprob_tol": tol}
        shapes = given.pop("shapes", "tiny" if cpu else ("sglang" if kind == "sglang" else "gpu"))
        return cls(device=device, engine_kind=kind, dtype=dtype, shapes=shapes, preset=given.pop("preset", "tiny" if cpu else "llama-8b"),
                   rule=RuleConfig(**rule), **given)


DEFAULT_RULES: dict[str, dict] = {
    "cpu": dict(look_rounds=4, max_looks=2, drift_bound=5.0, carry_bound=5.0, noise_floor=0.01, process_floor=0.01),
    "cuda": dict(look_rounds=5, max_looks=2, drift_bound=0.02, noise_floor=0.003, process_floor=0.001),
}
"""Rule parameters per device. The CUDA ones are the H200 calibration's choice on the llama-8b defaults
(docs/calibration-h200.json: 87 rounds of six engines, no false PASS in 306 B-vs-B' draws, 98.6% of injected 2%
gains passed, 3.1 minutes per qualification with boots); docs/qualification.md says what that does and does not show."""


def qualify_bundle(bundle: Bundle | str | os.PathLike, options: QualifyOptions | None = None, *,
                   baseline: Bundle | str | os.PathLike | None = None, progress: Progress | None = None) -> QualifyResult:
    """Qualifies `bundle` against the stock engine (or against `baseline`, the incumbent's bundle, armed in B and B')."""
    options = options or QualifyOptions()
    engine = options.engine()
    if options.sandboxed:
        ensure_available(engine_policy(options.device, engine.kind))  # fail closed before any engine starts
    else:
        logging.getLogger("hotfloat.qualify").warning(
            "UNSANDBOXED qualification: engine processes run candidate code with the validator's view")
    harden_self()
    vocab = PRESETS[options.preset]["vocab_size"]
    workload = make_workload(options.shapes, vocab, passes=options.rule.max_rounds,
                             warmup_passes=options.warmup_passes, seed=options.seed)
    started, t0 = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), time.monotonic()
    bundles = {"c": _loaded(bundle), **({"b": _loaded(baseline)} if baseline else {})}
    model_dir = _model_dir(engine)
    with staged(bundles, sandboxed=options.sandboxed) as paths:
        stock = {"bundle": paths.get("b"), "identity": bundles["b"].identity if baseline else None}
        arms = [stock, {"bundle": paths["c"], "identity": bundles["c"].identity}, stock]
        if options.twin:
            arms.append({**stock, "twin_of": paths["c"], "twin_identity": bundles["c"].identity})
        run = _protocol(engine, workload, options, arms, model_dir, progress)
    frames, twin, ident, info, order, decision = run
    evidence = Evidence(bundle_identity=bundles["c"].identity, baseline_identity=bundles["b"].identity if baseline else None,
                        engine=engine, engine_identity=ident or "unknown", engine_info=info, workload=workload,
                        order=order, rule=options.rule, env=environment(), sandboxed=options.sandboxed, frames=frames,
                        twin=twin, decision=decision, started=started, seconds=time.monotonic() - t0)
    return QualifyResult(status=decision.status, score=decision.score, reason=decision.reason, evidence=evidence)


def _model_dir(engine: EngineSpec) -> str | None:
    if engine.kind != "sglang":
        return None
    if engine.model_path:
        if not os.path.isfile(os.path.join(engine.model_path, "config.json")):
            raise InfrastructureError(f"--model {engine.model_path}: no config.json there")
        return os.path.abspath(engine.model_path)
    from .checkpoint import ensure

    return str(ensure(engine.preset, engine.dtype, engine.weight_seed))


def round_order(seed: int, round_index: int, n: int = 3) -> list[int]:
    """The order the engines serve a round's pass in, drawn from the workload seed (secret until the end)."""
    digest = hashlib.sha256(f"{seed}:order:{round_index}".encode()).digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


class _Acc:
    """What one engine served so far."""

    def __init__(self, index: int, role: Role):
        self.index, self.role = index, role
        self.pass_s: list[float] = []
        self.lat: list[list[float]] = []
        self.outs: list[list[dict]] = []
        self.error: str | None = None
        self.own = False
        self.routed: dict[str, int] = {}
        self.stock: dict[str, int] = {}
        self.boot_s = self.wall_s = 0.0
        self.generated = 0

    def fail(self, e: Exception, own: bool) -> None:
        if self.error is None:
            self.error, self.own = str(e)[:2000] or type(e).__name__, own

    def frame(self, n: int) -> RunFrame:
        ok = self.error is None
        cut = lambda xs: xs[:n] if ok else []  # noqa: E731
        timed = sum(self.pass_s[:n])
        return RunFrame(index=self.index, role=self.role, ok=ok, raised=self.own, error=self.error,
                        pass_s=cut(self.pass_s), latency_s=cut(self.lat),
                        tokens=[[o["tokens"] for o in p] for p in cut(self.outs)],
                        logprobs=[[o["logprobs"] for o in p] for p in cut(self.outs)],
                        margins=[[o["margins"] for o in p] for p in cut(self.outs)],
                        routed=self.routed, stock=self.stock, wall_s=self.wall_s, boot_s=self.boot_s,
                        tokens_per_s=self.generated / timed if ok and timed else 0.0)


def _protocol(engine: EngineSpec, workload, options: QualifyOptions, arms, model_dir, progress):
    rule = options.rule
    roles: list[Role] = ["B", "C", "B", "T"][:len(arms)]
    accs = [_Acc(i, r) for i, r in enumerate(roles)]
    warmup = [(prompts(workload, -1 - p, b), [r.max_new_tokens for r in batch])
              for p in range(workload.warmup_passes) for b, batch in enumerate(workload.batches)]
    graph_batches = sorted({len(b) for b in workload.batches})
    kv_tokens = kv_cap(workload)
    cpus = cpu_sets(3)
    engines: list[ResidentEngine | None] = [None] * len(arms)
    ident, info, order = None, {}, []
    t0 = time.monotonic()
    try:
        for i, arm in enumerate(arms):
            spec = dict(engine.model_dump(), **arm, warmup=warmup, threads=options.threads,
                        extra_passes=options.extra_passes.get(roles[i], 0), cpus=cpus[i % 3], graph_batches=graph_batches, kv_tokens=kv_tokens,
                        mem_fraction=options.mem_fraction, model_dir=model_view(model_dir, sandboxed=options.sandboxed))
            try:
                engines[i] = ResidentEngine(f"{i}{roles[i]}", spec, device=engine.device, kind=engine.kind,
                                            sandboxed=options.sandboxed, model_dir=model_dir)
            except (InfrastructureError, OSError, EngineFault) as e:
                accs[i].fail(e, own=False)
        if progress:
            progress("booting B, C, B'" + (", T" if len(arms) > 3 else ""), 0, rule.max_rounds)
        ident, info = _boot(engines, accs, t0 + options.startup_timeout_s)
        if len(arms) > 3:
            _twin(engines, accs, workload, rule.look_rounds, options.batch_timeout_s)
        done = 0
        while done < rule.max_rounds and all(a.error is None for a in accs):
            order.append(round_order(workload.seed, done))
            _round(engines, accs, workload, done, order[-1], options.batch_timeout_s)
            done += 1
            if progress:
                progress(f"round {done}", done, rule.max_rounds)
            if done % rule.look_rounds == 0 and all(a.error is None for a in accs) and _settled(accs, done, rule):
                break
        for i, e in enumerate(engines):
            if e is not None and accs[i].error is None:
                try:
                    accs[i].routed, accs[i].stock = e.stop(options.batch_timeout_s)
                except EngineFault as f:
                    accs[i].fail(f, f.own)
    finally:
        for i, e in enumerate(engines):
            if e is not None:
                accs[i].wall_s = e.lifetime_s
                e.close()
    n = min(len(a.pass_s) for a in accs[:3])
    frames = [a.frame(n) for a in accs[:3]]
    twin = _twin_frame(accs)
    decision = judge(frames, rule, order[:n], twin)
    if decision is None:  # an engine failed before the first look: judge has nothing to weigh
        decision = Decision(status="NO_DECISION", reason="the protocol ended before the rule could look")
    if progress:
        progress("done", rule.max_rounds, rule.max_rounds)
    return frames, twin, ident, info, order[:n], decision


def _boot(engines, accs, deadline: float) -> tuple[str | None, dict[str, str]]:
    """Waits for every ready message (they boot concurrently); B' and T must match B, and C must too, or C failed."""
    def ready(i):
        e = engines[i]
        if e is None:
            return None
        try:
            out = e.ready(deadline)
            accs[i].boot_s = e.boot_s
            return out
        except EngineFault as f:
            accs[i].fail(f, f.own)
            return None

    with ThreadPoolExecutor(len(engines)) as pool:
        got = list(pool.map(ready, range(len(engines))))
    ident, info = got[0] if got[0] else (None, {})
    for k in range(2, len(engines)):
        if got[0] and got[k] and got[k][0] != ident:
            accs[k].fail(Exception(f"engine identity differs between B and engine {k} ({ident[:12]} vs {got[k][0][:12]})"),
                         own=False)
    if got[0] and got[1] and got[1][0] != ident:
        accs[1].fail(Exception(f"candidate engine reported identity {got[1][0][:12]}, not the baseline's {ident[:12]}"),
                     own=True)
    return ident, info


def _twin(engines, accs, workload, rounds: int, timeout_s: float) -> None:
    """The twin serves the prompts of the first `rounds` rounds, untimed, then leaves (stopped, counted, closed):
    the gate compares its divergence from B on the same prompts with C's."""
    t, acc = engines[3], accs[3]
    if t is None or acc.error is not None:
        return
    try:
        for r in range(rounds):
            _round(engines, accs, workload, r, [3], timeout_s)
            if acc.error is not None:
                return
        acc.routed, acc.stock = t.stop(timeout_s)
    except EngineFault as f:
        acc.fail(f, own=False)
    finally:
        acc.wall_s = t.lifetime_s
        t.close()
        engines[3] = None


def _twin_frame(accs) -> RunFrame | None:
    """Everything the twin served (it leaves before timing, so its passes are not cut to the timed rounds)."""
    return accs[3].frame(len(accs[3].pass_s)) if len(accs) > 3 else None


def _round(engines, accs, workload, r: int, order: list[int], timeout_s: float) -> None:
    """One pass of every batch on each engine, engine after engine in `order`, on this round's fresh prompts."""
    batches = [(prompts(workload, r, b), [q.max_new_tokens for q in batch]) for b, batch in enumerate(workload.batches)]
    for i in order:
        total, lat, outs = 0.0, [], []
        try:
            with alone(engines, engines[i]):
                for ps, mx in batches:
                    s, got = engines[i].serve(ps, mx, timeout_s)
                    total += s
                    lat += [x for x, _ in got]
                    outs += [o for _, o in got]
        except EngineFault as f:
            at = next((k for k, e in enumerate(engines) if e is not None and e.name == f.who), i)
            accs[at].fail(f, f.own)
            return
        a = accs[i]
        a.pass_s.append(total)
        a.lat.append(lat)
        a.outs.append(outs)
        a.generated += sum(sum(mx) for _, mx in batches)


def _settled(accs, n: int, rule: RuleConfig) -> bool:
    """Whether the gate or the rule already decides on the first n rounds (counts are not needed to know that)."""
    frames = [a.frame(n) for a in accs[:3]]
    twin = _twin_frame(accs)
    if twin is not None and not twin.ok or gate(frames, rule.logprob_tol, twin)[0] != "PASS":
        return True
    return decide(frames[0].pass_s, frames[1].pass_s, frames[2].pass_s, rule) is not None


def _loaded(bundle: Bundle | str | os.PathLike) -> Bundle:
    return bundle if isinstance(bundle, Bundle) else load_bundle(bundle)


def environment() -> dict:
    """The host's environment identity (hotfloat.env), as plain JSON data for the evidence."""
    from ..env import collect

    return collect().model_dump(mode="json")

"""The three preflight questions, each answered by checks:

1. device: does Torch see the intended devices, with the capability recorded, and does its CUDA match the driver
   and (inside our image) the image's lock?
2. static: are the pinned engine and chain symbols present (the compat and chain-compat rows)?
3. behavioral: does a faithful control pass and a broken control fail verify here, and on a GPU does a CUDA-graph
   capture and replay work?
Each answer is data (PASS / FAIL / NO_DECISION per check); the caller decides the exit code from them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import computed_field

from ..env import IMAGE_IDENTITY_FILE, EnvIdentity, collect
from ..record import Record
from ..verdict import Status, combine

Question = Literal["device", "static", "behavioral"]
QUESTIONS: tuple[Question, ...] = ("device", "static", "behavioral")
CONTROLS = Path(__file__).resolve().parent / "controls"
"""The faithful and broken control bundles shipped with the library (so images carry them too)."""


class Check(Record):
    """One row of the preflight: which question it answers, what it checked, and the outcome."""

    question: Question
    name: str
    status: Status
    detail: str


class PreflightReport(Record):
    """Every check, the per-question outcome, and the environment they ran in."""

    device: str
    checks: tuple[Check, ...]
    env: EnvIdentity

    @computed_field
    @property
    def questions(self) -> dict[str, Status]:
        return {q: combine([c.status for c in self.checks if c.question == q]) for q in QUESTIONS}

    @computed_field
    @property
    def failed(self) -> list[str]:
        """Questions that did not pass (FAIL or NO_DECISION): the host is not ready for them."""
        return [q for q, s in self.questions.items() if s in (Status.FAIL, Status.NO_DECISION)]


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("+")[0].split(".")[:2] if p.isdigit())


def device_checks(env: EnvIdentity, device: str) -> Iterator[Check]:
    """Question 1: Torch, the devices it sees, and whether its CUDA agrees with the driver and the image lock."""
    try:
        import torch
    except Exception as e:  # a broken Torch install is exactly what this question is for
        yield Check(question="device", name="torch import", status=Status.FAIL, detail=f"{type(e).__name__}: {e}")
        return
    yield Check(
        question="device",
        name="torch",
        status=Status.PASS,
        detail=f"torch {torch.__version__} (CUDA {torch.version.cuda or 'none'})",
    )
    yield from _image_lock_checks(torch.__version__)
    if device == "cpu":
        yield Check(question="device", name="device", status=Status.PASS, detail="cpu requested; GPUs are not used")
        return
    if not torch.version.cuda:
        yield Check(
            question="device",
            name="torch CUDA",
            status=Status.FAIL,
            detail=f"CPU build of Torch ({torch.__version__}) on a host asked to use CUDA",
        )
        return
    if env.driver_cuda is None:
        yield Check(
            question="device", name="driver", status=Status.FAIL, detail=env.absent.get("driver_cuda", "no driver")
        )
        return
    fits = _version_tuple(torch.version.cuda) <= _version_tuple(env.driver_cuda)
    yield Check(
        question="device",
        name="torch CUDA vs driver",
        status=Status.PASS if fits else Status.FAIL,
        detail=f"Torch built for CUDA {torch.version.cuda}; driver {env.driver} supports up to {env.driver_cuda}",
    )
    if not torch.cuda.is_available():
        yield Check(
            question="device", name="cuda available", status=Status.FAIL, detail="torch.cuda.is_available() is False"
        )
        return
    count = torch.cuda.device_count()
    major, minor = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name(0)
    same = (count == env.gpu_count and f"{major}.{minor}" == env.gpu_capability) or env.gpu_count is None
    yield Check(
        question="device",
        name="visible devices",
        status=Status.PASS if same else Status.FAIL,
        detail=f"torch sees {count} x {name} (sm_{major}{minor}); nvidia-smi: {env.gpu_count} x "
        f"{env.gpu_model} ({env.gpu_capability}), CUDA_VISIBLE_DEVICES={env.gpu_visibility}",
    )


def _image_lock_checks(torch_version: str) -> Iterator[Check]:
    path = Path(os.environ.get("HOTFLOAT_IMAGE_IDENTITY") or IMAGE_IDENTITY_FILE)
    try:
        locked = json.loads(path.read_text()).get("python", {})
    except (OSError, ValueError, AttributeError):
        return  # not inside one of our images: there is no image lock to hold Torch to
    want = locked.get("torch")
    yield Check(
        question="device",
        name="torch vs image lock",
        status=Status.PASS if want == torch_version else Status.FAIL,
        detail=f"running torch {torch_version}; the image lock pins {want}",
    )


def static_checks() -> Iterator[Check]:
    """Question 2: the compat (SGLang seams at the pin) and chain-compat (bittensor SDK) tables, no network."""
    from ..compat import check
    from ..errors import HotfloatError

    for name, target in (("compat", "sglang"), ("chain-compat", "bittensor")):
        try:
            report = check(target)
        except HotfloatError as e:  # no engine venv, a crashed probe: this host cannot answer the question
            yield Check(question="static", name=name, status=Status.NO_DECISION, detail=str(e))
            continue
        for row in report.rows:  # the version row names the interpreter: SGLang's is the engine venv, not this one
            where = f" in {report.python}" if row.name.endswith(" version") else ""
            yield Check(question="static", name=f"{name}: {row.name}", status=row.status, detail=row.detail + where)


def behavioral_checks(device: str, controls: Path = CONTROLS) -> Iterator[Check]:
    """Question 3: the controls through the real verify path, and on a GPU a CUDA-graph capture and replay."""
    from ..bundle import load_bundle
    from ..verify import VerifyOptions, verify_bundle

    options = VerifyOptions(device=device, trials=1, max_shapes=1, dtypes=["fp32"] if device == "cpu" else ["bf16"])
    for control, expected in (("faithful", Status.PASS), ("broken", Status.FAIL)):
        try:
            report = verify_bundle(load_bundle(controls / control), options)
        except Exception as e:  # infrastructure could not judge: the question has no answer on this host
            yield Check(
                question="behavioral",
                name=f"{control} control",
                status=Status.NO_DECISION,
                detail=f"verify could not run: {type(e).__name__}: {e}",
            )
            continue
        ok = report.status == expected
        yield Check(
            question="behavioral",
            name=f"{control} control",
            status=Status.PASS if ok else Status.FAIL,
            detail=f"verify says {report.status.value}, expected {expected.value} "
            f"({len(report.rows)} rows, {report.seconds:.1f} s, sandbox: {', '.join(report.bounds) or 'none'})",
        )
    if device == "cuda":
        yield _graph_check()


def _graph_check() -> Check:
    import torch

    try:
        x = torch.randn(4096, device="cuda")
        y = torch.empty_like(x)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            torch.mul(x, 2.0, out=y)  # warm-up outside capture, as the graph API requires
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            torch.mul(x, 2.0, out=y)
        for _ in range(3):
            x.copy_(torch.randn_like(x))
            y.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            if not torch.equal(y, x * 2.0):
                return Check(
                    question="behavioral",
                    name="cuda graph",
                    status=Status.FAIL,
                    detail="a replayed graph wrote wrong values",
                )
    except Exception as e:
        return Check(question="behavioral", name="cuda graph", status=Status.FAIL, detail=f"{type(e).__name__}: {e}")
    return Check(
        question="behavioral", name="cuda graph", status=Status.PASS, detail="captured once, replayed 3x correctly"
    )


def preflight(device: str | None = None, questions: tuple[Question, ...] = QUESTIONS) -> PreflightReport:
    """Runs the chosen questions; `device` defaults to cuda when a GPU is visible, else cpu."""
    env = collect()
    chosen = device or ("cuda" if env.gpu_count else "cpu")
    checks: list[Check] = []
    if "device" in questions:
        checks += device_checks(env, chosen)
    if "static" in questions:
        checks += static_checks()
    if "behavioral" in questions:
        checks += behavioral_checks(chosen)
    return PreflightReport(device=chosen, checks=tuple(checks), env=env)

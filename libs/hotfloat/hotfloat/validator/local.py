"""The stages in this process (`LocalStages`): each stage's policy is one library call here, and the gRPC servicers,
`hotfloat build`, `hotfloat admit` and an in-process validator all make it, so what a stage decides cannot depend on
who asked. Candidate code still runs only where the library puts it: builds in a jailed child, verification and the
cubin load in sandboxed children, qualification in sandboxed engine processes."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pydantic import ValidationError

from ..admission.admit import admit
from ..bundle import Bundle, unpack
from ..compiler import BuildRecord, build_bundle
from ..errors import InputError
from ..qualify import QualifyOptions, RuleConfig, qualify_bundle
from ..qualify.records import AttentionBackend
from ..qualify.calibration import CalibrationFile, caveat
from ..qualify.options import rule_from, rule_given
from ..record import first_error
from ..scan import ScanReport, scan_bundle
from ..verdict import Status, combine
from ..verify import VerifyOptions
from .evidence import Admitted, Qualified
from .stages import OnProgress, OnStart, Outcome


@dataclass(frozen=True)
class StageConfig:
    """What a worker chooses for its stages (a service's flags, a local validator's config); the defaults are the
    full protocol."""

    device: str = "cpu"
    """Where admission verifies and qualification runs."""
    verify_trials: int = 3
    verify_max_shapes: int | None = None
    """Only the first N verification shapes per dtype (quick local loops); None verifies every shape."""
    verify_dtypes: tuple[str, ...] | None = None
    """Only these dtypes; None verifies every dtype an op declares."""
    qualify_warmup_passes: int = 1
    qualify_rule: RuleConfig | None = None
    """A decision rule given by hand (tests, the CPU demo); None: the library default."""
    qualify_calibration: CalibrationFile | None = None
    """The calibration record qualification decides with (`--rule-from`), named in every verdict; not beside
    `qualify_rule`."""
    qualify_attention: AttentionBackend | None = None
    """SGLang's attention backend in every qualification engine (`hotfloat qualify run --attention`); None: the GPU's
    default."""
    qualify_extra_passes: tuple[tuple[str, int], ...] = ()
    """Calibration only: (role, extra stock passes) injected into every qualification, reported in its reasons."""

    def __post_init__(self):
        if self.qualify_rule is not None and self.qualify_calibration is not None:
            raise ValueError("a stage decides with a rule given by hand or a calibration record's, not both")

    def verify_options(self, seed: int | None = None) -> VerifyOptions:
        """The configured verification with a caller's replay seed, validated like any other input."""
        try:
            return VerifyOptions(
                device=self.device,
                trials=self.verify_trials,
                max_shapes=self.verify_max_shapes,
                dtypes=list(self.verify_dtypes) if self.verify_dtypes else None,
                seed=seed,
            )
        except ValidationError as e:
            raise InputError(f"verify options: {first_error(e)}") from None

    def qualify_options(self) -> QualifyOptions:
        return QualifyOptions.for_device(
            self.device,
            warmup_passes=self.qualify_warmup_passes,
            attention=self.qualify_attention,
            extra_passes=dict(self.qualify_extra_passes),
            **(rule_from(self.qualify_calibration) if self.qualify_calibration else {}),
            **(rule_given(self.qualify_rule) if self.qualify_rule else {}),
        )


def scan_stage(bundle: Bundle) -> Outcome[ScanReport]:
    """The static policy: PASS when every file is clean, else FAIL with each finding."""
    report = scan_bundle(bundle)
    return Outcome(Status.PASS if report.clean else Status.FAIL, _findings(report), report)


def build_stage(bundle: Bundle, arch: str = "sm_90a") -> Outcome[BuildRecord]:
    """Scans again (a build never compiles code the policy refuses), then builds deviceless."""
    report = scan_bundle(bundle)
    if not report.clean:
        record = BuildRecord(
            bundle_identity=bundle.identity,
            arch="none",
            toolchain={},
            status=Status.FAIL,
            reasons=["scan refused the bundle", *_findings(report)],
        )
    else:
        record = build_bundle(bundle, arch=arch)
    return built_outcome(record)


def built_outcome(record: BuildRecord) -> Outcome[BuildRecord]:
    """A build record as the stage outcome admission takes: its verdict and reasons, its cubins as the artifacts."""
    return Outcome(record.status, list(record.reasons), record, dict(record.cubins))


def admit_stage(bundle: Bundle, built: Outcome[BuildRecord], options: VerifyOptions) -> Outcome[Admitted]:
    """Re-checks the build (a passed or not-needed one, its cubins' digests), verifies the ops, then admits the
    cubins (same seed) when the build made any; the verdict combines the checks that applied (any FAIL fails, then
    any NO_DECISION), with the failing and undecided rows as its reasons."""
    if built.status is not built.evidence.status or built.status not in (Status.PASS, Status.N_A):
        raise InputError(
            f"admission needs a passed or not-needed build, got {built.status.value} "
            f"(its record says {built.evidence.status.value})"
        )
    build = built.evidence.with_cubins(built.artifacts)
    from ..verify import verify_bundle  # torch loads when admission runs, not when the validator's records are read

    report = verify_bundle(bundle, options)
    native = admit(bundle, build, seed=report.seed) if build.status is Status.PASS else None
    reasons = [  # one per distinct reason (a mistake that fails every row is said once, with how many it failed)
        f"{r.slot}:{r.variant} {r.dtype} {r.shape}"
        + (f" and {len(rows) - 1} more rows" if len(rows) > 1 else "")
        + f": {r.reason}"
        for rows, r in report.reasons()
        if r.status in (Status.FAIL, Status.NO_DECISION)
    ]
    if report.status is Status.N_A:
        reasons = [f"no op of the bundle applies on {options.device}"]
    statuses = [report.status]
    if native is not None:
        statuses.append(native.status)
        if native.status is not Status.PASS:
            reasons += [f"cubins: {r}" for r in native.reasons]
    status = combine(statuses)
    return Outcome(
        status, [] if status is Status.PASS else reasons, Admitted(verify=report, native=native, device=options.device)
    )


def qualify_stage(bundle: Bundle, options: QualifyOptions, on_progress: OnProgress) -> Outcome[Qualified]:
    """One complete-engine A/B; a calibration knob in force is named in the reasons, so no injected speed difference
    passes for a real one, and so is a calibration record that does not back the verdict in full."""
    result = qualify_bundle(
        bundle, options, progress=lambda what, done, most: on_progress("qualify", f"{what} ({done}/{most})")
    )
    reasons = [result.reason] if result.reason else []
    if (line := caveat(result.status, result.evidence.calibration)) is not None:
        reasons.append(line)  # a PASS its calibration does not back says so wherever its reasons go
    if options.extra_passes:
        reasons.append(
            f"calibration: extra stock passes per role {dict(sorted(options.extra_passes.items()))} were injected"
        )
    return Outcome(Status(result.status), reasons, Qualified(**dict(result.evidence), score=result.score))


def bundle_of(archive: bytes, identity: str) -> Bundle:
    """Unpacks with the library's bounds and refuses an archive whose content is not the identity claimed."""
    bundle = unpack(archive)
    if bundle.identity != identity:
        raise InputError(
            f"bundle identity mismatch: claimed {identity[:16] or '(none)'}, content is {bundle.identity[:16]}"
        )
    return bundle


class LocalStages:
    """`Stages` by in-process library calls: the validator without services, and the body of each servicer."""

    def __init__(self, config: StageConfig = StageConfig()):
        self.config = config
        self._timing = threading.Lock()
        """One A/B at a time: two qualifications sharing the host would time each other, not their bundles."""

    def scan(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[ScanReport]:
        return scan_stage(bundle_of(archive, identity))

    def build(self, archive: bytes, identity: str, on_progress: OnProgress) -> Outcome[BuildRecord]:
        return build_stage(bundle_of(archive, identity))

    def admit(
        self,
        archive: bytes,
        identity: str,
        built: Outcome[BuildRecord],
        on_progress: OnProgress,
        *,
        on_start: OnStart | None = None,
        seed: int | None = None,
    ) -> Outcome[Admitted]:
        """`seed` replays a verification; None draws a fresh secret."""
        bundle = bundle_of(archive, identity)
        if on_start is not None:
            on_start("")
        return admit_stage(bundle, built, self.config.verify_options(seed))

    def qualify(
        self,
        archive: bytes,
        identity: str,
        on_progress: OnProgress,
        *,
        on_start: OnStart | None = None,
        avoid: str | None = None,
    ) -> Outcome[Qualified]:
        """`avoid` names another endpoint; this process is the only one, so it qualifies here once the host is free."""
        bundle = bundle_of(archive, identity)
        if not self._timing.acquire(blocking=False):
            on_progress("qualify", "waiting for the host: another qualification is timing")
            self._timing.acquire()
        try:
            on_progress("qualify", "starting")  # a caller that left while this run waited is not timed at all
            if on_start is not None:
                on_start("")
            return qualify_stage(bundle, self.config.qualify_options(), on_progress)
        finally:
            self._timing.release()


def _findings(report: ScanReport) -> list[str]:
    return [f"{o.op}: {f}" for o in report.ops for f in o.findings]

"""The validator assembled once from its `ValidatorConfig`: the ledger (with the chain's tables and cycle when the
config names a network), the stages (in this process, spawned services or remote endpoints) and the pipeline.
`hotfloat validator run` and `hotfloat demo` are both this; it lives with the services because it may dial them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from hotfloat.errors import InputError
from hotfloat.ledger import Ledger, State
from hotfloat.validator import LocalStages, Pipeline, StageConfig, Stages
from hotfloat.admission.scope import QUICK_ADMISSION
from hotfloat.validator.config import ValidatorConfig
from hotfloat.validator.evidence import EVIDENCE
from hotfloat.validator.pipeline import OnEvent

from ..common.auth import load_token
from ..common.transport import Tls
from .clients import StageClients
from .spawn import spawned


def stage_config(config: ValidatorConfig, calibration=None) -> StageConfig:
    """What stages in this process run with: the settings `spawned` gives its services as flags."""
    quick = QUICK_ADMISSION.stage_kwargs() if config.quick else {}
    return StageConfig(
        device=config.stage_device(), qualify_calibration=calibration, qualify_attention=config.attention, **quick
    )


class Validator:
    """Opened as a context (everything it starts stops on exit); `run` works the queue, `cycle` is the chain's
    intake-and-weights step (None without a network) and `ledger` is open for reading while it is."""

    def __init__(
        self,
        config: ValidatorConfig,
        *,
        on_event: OnEvent | None = None,
        on_progress: OnEvent | None = None,
        report: Callable[[str], None] = lambda message: None,
    ):
        self.config, self._on_event, self._on_progress, self._report = config, on_event, on_progress, report
        self._stack = contextlib.ExitStack()
        self.ledger: Ledger | None = None
        self.cycle: Callable[[], None] | None = None
        self.pipeline: Pipeline | None = None
        self.feed = None
        """The report feed's server when the config asks for one (its `url` is where miners read it)."""
        self._abandon: Callable[[], None] | None = None

    def __enter__(self) -> Validator:
        try:
            self._open()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def run(self, stop: threading.Event | None = None) -> dict[str, int]:
        """Works the queue (resuming interrupted work first) until it is empty, or with `follow` until `stop` is set;
        a stop lets the calls in flight finish and abandons those still waiting for an endpoint."""
        return self.pipeline.run(drain=not self.config.follow, stop=stop, cycle=self.cycle)

    def _open(self) -> None:
        c = self.config
        calibration = None
        if c.rule_from:
            from hotfloat.qualify.calibration import read_calibration

            # a spawned service reads it the same way: a bad record is refused first
            calibration = read_calibration(c.rule_from)
        stages = self._stages(calibration)
        self.ledger = self._ledger()
        through = State(c.last_state()[0])
        self.pipeline = Pipeline(
            self.ledger,
            stages,
            through=through,
            workers=c.workers,
            max_attempts=c.max_attempts,
            on_event=self._on_event,
            on_progress=self._on_progress,
            on_stop=self._abandon,
            settlement=c.settlement,
        )

    def _stages(self, calibration) -> Stages:
        c = self.config
        if c.stages == "local":
            return LocalStages(stage_config(c, calibration))
        if c.stages == "spawned":
            names = ("compiler", "admission", "qualification") if c.rule_from else ("compiler", "admission")
            self._report(f"starting {', '.join(names[:-1])} and {names[-1]} services ...")
            targets, token = self._stack.enter_context(
                spawned(names, device=c.stage_device(), quick=c.quick, rule_from=c.rule_from, attention=c.attention)
            )
            compiler, admission = targets["compiler"], [targets["admission"]]
            qualification = [targets["qualification"]] if "qualification" in targets else []
        else:
            token = load_token(c.token_file)
            compiler, admission, qualification = c.compiler, c.admission, c.qualification
        tls = Tls.load(c.tls.ca, c.tls.cert, c.tls.key) if c.tls else None
        clients = StageClients(compiler, admission, qualification, token=token, tls=tls)
        self._stack.callback(clients.close)
        self._abandon = clients.abandon
        return clients

    def _ledger(self) -> Ledger:
        """The plain ledger, or with a network the ledger with the chain tables and the checked chain cycle."""
        c, chain = self.config, self.config.chain
        if chain.network is None:
            return self._stack.enter_context(Ledger(c.ledger, evidence=EVIDENCE))
        from hotfloat.chain.client import Chain, load_wallet
        from hotfloat.chain.cycle import ChainCycle
        from hotfloat.chain.feed_server import FeedServer
        from hotfloat.chain.fetch import FetchPolicy
        from hotfloat.chain.reveal import RevealPolicy
        from hotfloat.chain.tables import open_ledger
        from hotfloat.chain.weights import WEIGHTS_EVERY

        signer = load_wallet(chain.wallet, chain.hotkey, chain.wallet_path)
        client = Chain(chain.network)
        self._stack.callback(client.close)
        led = self._stack.enter_context(open_ledger(c.ledger))
        feed = None
        if chain.feed:
            host, port = chain.feed.rsplit(":", 1)
            try:
                feed = FeedServer(host, int(port), chain.feed_cert, chain.feed_key)
            except OSError as e:  # the address is taken, the certificate or key unreadable
                raise InputError(f"--feed {chain.feed}: {e}") from None
            self._stack.callback(feed.close)
            self._report(f"report feed: {feed.url}, signed by {signer.hotkey.ss58_address}")
        self.feed = feed
        self.cycle = ChainCycle(
            client,
            led,
            chain.netuid,
            signer,
            weights_every=chain.weights_every or WEIGHTS_EVERY,
            policy=FetchPolicy(cafile=chain.cafile, allow_private=chain.allow_private),
            reveals=RevealPolicy(chain.reveal_after, chain.reveal_within),
            feed=feed,
            report=self._report,
        )
        self.cycle.check()
        return led

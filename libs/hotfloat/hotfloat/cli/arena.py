"""The whole arena on one CPU machine, for `hotfloat demo`: real wallets, the stand-in chain, an HTTPS origin on
loopback, the three services on Unix sockets and the validator pipeline with its chain cycle.

It lives beside the CLI (not in the library) because it starts the gRPC services; every step is the production code
path with demo-sized settings, and each setting that differs from a validator's is printed where it applies.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import secrets
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..ledger import NEXT, State
from ..qualify.rule import not_shown
from .miners import MINERS, Miner, publish, read_reports

NETUID = 7
WEIGHTS_EVERY = 20
REVEAL_AFTER = 3
"""The demo validator's reveal delay in blocks (a validator's default is 10)."""
Report = Callable[[str], None]


@dataclass
class Row:
    """What the validator made of one miner's commitment, stage by stage."""

    miner: str
    uid: int
    role: str
    identity: str = ""
    stages: dict[str, str] = field(default_factory=dict)
    state: str = "not taken in"
    reason: str = ""
    score: float | None = None
    crown: str = ""
    weight: float = 0.0
    expected: str = ""
    as_expected: bool = False
    not_shown: bool = False
    """The rule failed it on speed without showing it slower (a CPU's noise can hide a real speed-up)."""
    report: list[str] = field(default_factory=list)
    """What the miner read about its submissions in the validator's signed feed."""


@dataclass
class Outcome:
    """The summary rows plus what the run chose, for the table and the exit code."""

    rows: list[Row]
    weights: dict[int, int]
    settings: list[str]
    seconds: float = 0.0


class Origin:
    """A loopback HTTPS server with a throwaway CA: where miners publish archives, as a real origin would; the CA
    also signs the certificate of the validator's report feed (`feed_cert`)."""

    def __init__(self, root: Path):
        import trustme

        ca = trustme.CA()
        self.cafile = str(root / "origin-ca.pem")
        ca.cert_pem.write_to_path(self.cafile)
        self.feed_cert = str(root / "feed.pem")
        ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(self.feed_cert)
        self.routes: dict[str, bytes] = {}
        routes = self.routes

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                body = routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1").configure_cert(ctx)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, path: str, data: bytes) -> str:
        self.routes[path] = data
        return f"https://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def services_config(handicap: int):
    """Demo-sized service settings, each printed by `settings` so nobody mistakes them for a validator's."""
    from ..qualify import RuleConfig
    from ..validator import StageConfig

    return StageConfig(
        verify_max_shapes=2,
        verify_dtypes=("fp32", "bf16"),
        qualify_rule=RuleConfig(logprob_tol=1e-3, drift_bound=5.0, look_rounds=3, max_looks=2),
        qualify_extra_passes=(("B", handicap),) if handicap else (),
    )


PROGRESS_EVERY_S = 3.0
"""Least seconds between two progress lines of one submission's stage."""


def settings(handicap: int) -> list[str]:
    """Every way the demo differs from a validator's deployment, printed with the summary."""
    return [
        "admission verifies 2 shapes per dtype in fp32 and bf16 (a validator verifies every shape and dtype)",
        "qualification: the tiny CPU engine, at most 6 rounds of B C B' (a look after 3); the drift bound is loose "
        "for a shared CPU",
        (
            f"the baseline engine runs {handicap} extra stock activation passes (the calibration knob): nothing beats "
            "stock torch on a CPU, so without it the honest miner cannot show a speed-up here; `--handicap 0` removes it"
            if handicap
            else "no handicap: the honest kernel is as fast as stock, so expect NO_DECISION or FAIL"
        ),
        "settlement crowns provisional PASSes: no calibration record measures a CPU, so every PASS here is "
        "provisional, which a validator's default holds out of the crowns",
    ]


@contextlib.contextmanager
def _sdk_home(root: Path) -> Iterator[None]:
    """Keeps the bittensor SDK's config and caches inside the demo's folder, not the user's home."""
    saved = {k: os.environ.get(k) for k in ("BTCLI_TOKEN_SYMBOLS_CACHE", "BTCLI_CONFIG")}
    os.environ["BTCLI_TOKEN_SYMBOLS_CACHE"] = str(root / "bt" / "symbols.json")
    os.environ["BTCLI_CONFIG"] = str(root / "bt" / "config.json")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_arena(root: Path, handicap: int, report: Report) -> Outcome:
    """Miners commit, the validator takes the commitments in, scans, builds, verifies, qualifies, settles, crowns
    and sets weights; returns one row per miner."""
    import time

    import bittensor as bt
    from hotfloat_services.serve import start
    from hotfloat_services.validator.node import Validator

    from ..chain.client import Chain
    from ..chain.standin import LocalSubstrate
    from ..chain.intake import observations
    from ..validator import SettlementPolicy
    from ..validator.config import ChainSettings, ValidatorConfig
    from ..validator.standings import crowns, scores

    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_sdk_home(root))
        wallets = {}
        for name in ("validator", *(m.name for m in MINERS)):
            w = bt.Wallet(name, "default", path=str(root / "wallets"))
            w.create_new_hotkey(use_password=False, suppress=True, overwrite=True)
            wallets[name] = w
        hotkeys = {name: w.hotkey.ss58_address for name, w in wallets.items()}
        chain_path = root / "chain.json"
        LocalSubstrate.create(
            chain_path, NETUID, [(hotkeys[n], hotkeys[n], n == "validator") for n in hotkeys], max_fields=9
        )
        network = f"standin:{chain_path}"
        report(
            f"chain: stand-in subnet {NETUID} at {chain_path}; uid 0 validator, uids 1-{len(MINERS)} "
            f"{', '.join(m.name for m in MINERS)}"
        )
        origin = Origin(root)
        stack.callback(origin.close)
        chain = Chain(network)
        stack.callback(chain.close)

        identities = publish(chain, wallets, origin, LocalSubstrate(chain_path).advance, report, NETUID, REVEAL_AFTER)
        rows = {
            hotkeys[m.name]: Row(
                m.name,
                uid,
                m.role,
                identity=identities[m.name],
                expected=f"FAIL at {m.expected_stage}" if m.expected_stage else "scored",
            )
            for uid, m in enumerate(MINERS, 1)
        }
        LocalSubstrate(chain_path).advance(3)  # past the finality lag, so intake sees every reveal

        token, token_file = secrets.token_urlsafe(32), root / "token"
        token_file.touch(mode=0o600)
        token_file.write_text(token)
        config, targets = services_config(handicap), {}
        for name in ("compiler", "admission", "qualification"):
            running = start(name, str(root / f"{name}.sock"), token=token, config=config)
            stack.callback(running.stop, 0)
            targets[name] = running.target
        report(f"services: compiler, admission and qualification on Unix sockets in {root}")
        for line in settings(handicap):
            report(f"  demo setting: {line}")

        chain_settings = ChainSettings(
            network=network,
            netuid=NETUID,
            wallet="validator",
            wallet_path=str(root / "wallets"),
            weights_every=WEIGHTS_EVERY,
            cafile=origin.cafile,
            allow_private=True,
            reveal_after=REVEAL_AFTER,
            reveal_within=50,
            feed="127.0.0.1:0",
            feed_cert=origin.feed_cert,
            feed_key=origin.feed_cert,
        )
        config = ValidatorConfig(
            ledger=str(root / "validator.db"),
            stages="remote",
            compiler=targets["compiler"],
            admission=[targets["admission"]],
            qualification=[targets["qualification"]],
            token_file=str(token_file),
            through="scored",
            max_attempts=2,
            chain=chain_settings,
            settlement=SettlementPolicy(provisional="crowned"),
        )
        names = {}

        def event(sid: int, stage: str, message: str) -> None:
            if sid not in names:
                names[sid] = rows.get(node.ledger.get(sid).submitter, Row("?", 0, "")).miner
            report(f"validator: #{sid} {names[sid]} {stage}: {message}")

        said: dict[tuple[int, str], tuple[float, str]] = {}

        def progress(sid: int, stage: str, message: str) -> None:
            """A stage's streamed progress (a qualification's boots and rounds) when it says something new, a line
            every few seconds at most: the long stages are never silent, the short ones never chatty."""
            at, last = said.get((sid, stage), (0.0, ""))
            if message != last and time.monotonic() - at >= PROGRESS_EVERY_S:
                said[(sid, stage)] = (time.monotonic(), message)
                event(sid, stage, message)

        node = stack.enter_context(Validator(config, on_event=event, on_progress=progress, report=report))
        node.run()
        LocalSubstrate(chain_path).advance(WEIGHTS_EVERY)  # a fresh window of blocks: the settled crowns publish now
        node.cycle()
        weights, _ = chain.weights_row(NETUID, 0)
        report(
            f"weights: the validator's u16 row on chain is {dict(sorted(weights.items())) or 'empty (nothing crowned)'}"
        )

        names = {hotkeys[m.name]: m.name for m in MINERS}
        reports = read_reports(node.feed.url, origin.cafile, hotkeys["validator"], names, report)
        for hotkey, row in rows.items():
            row.report = reports.get(hotkey, [])

        led = node.ledger
        for (hotkey, _, _), (status, reason, _) in observations(led, NETUID).items():
            rows[hotkey].stages["intake"] = "PASS" if status == "accepted" else "FAIL"
            if status == "refused":
                rows[hotkey].state, rows[hotkey].reason = "refused at intake", reason
        kept = {led.get(sid).identity: s.score for sid, s in scores(led).items()}
        held = {}
        for crown in crowns(led).values():
            held.update({crown.winner: "winner", crown.runner_up: "runner-up"})
        total = sum(weights.values()) or 1
        for sub in led.submissions():
            row = rows[sub.submitter]
            row.state, row.reason, row.score = sub.state.value, sub.reason, kept.get(sub.identity)
            row.crown = held.get(sub.identity) or ""
            for t in led.transitions(sub.id)[1:]:
                evidence, stage = t.evidence, NEXT[t.from_state][0]
                decided = {State.FAILED: "FAIL", State.NO_DECISION: "NO_DECISION"}.get(t.to_state)
                row.stages[stage] = decided or evidence.status.value  # a build of python-only ops is N/A
                if stage == "qualify" and evidence is not None:
                    row.not_shown |= not_shown(evidence.record.decision, evidence.record.rule)
        for row in rows.values():
            row.weight = weights.get(row.uid, 0) / total
            row.as_expected = _as_expected(row, next(m for m in MINERS if m.name == row.miner), handicap, identities)
    return Outcome(
        rows=list(rows.values()), weights=weights, settings=settings(handicap), seconds=time.monotonic() - started
    )


def _as_expected(row: Row, miner: Miner, handicap: int, identities: dict[str, str]) -> bool:
    """A stopped miner must be stopped at its stage (a copier as a copy of the miner it copied); the honest one must
    pass admission, then be scored, or end NO_DECISION at qualification, or FAIL there as not shown faster (CPU noise
    hid the handicap), or (without the handicap) FAIL there on speed."""
    if miner.copies is not None:
        return row.stages.get("intake") == "FAIL" and row.reason.startswith(f"copy_of:{identities[miner.copies]}")
    if miner.expected_stage is not None:
        return row.stages.get(miner.expected_stage) == "FAIL"
    if any(row.stages.get(s) not in ("PASS", "N/A") for s in ("intake", "scan", "build", "admit")):
        return False
    qualified = (row.stages.get("qualify"), row.stages.get("score"))
    allowed = {("PASS", "PASS"), ("NO_DECISION", None), ("PASS", "NO_DECISION")}
    if not handicap or row.not_shown:
        allowed |= {("FAIL", None)}
    return qualified in allowed

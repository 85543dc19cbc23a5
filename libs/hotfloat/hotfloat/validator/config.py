"""One typed configuration for a validator run, from a TOML file (`validator run --config FILE`) with command-line
flags over it: the ledger, where the stages run (in this process, as spawned local services, or at remote
endpoints, several per admission and qualification), credentials, the device, the rule source, what a PASS is worth
and the chain."""

from __future__ import annotations

import re

from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from ..bundle.bounded import load_toml, read_file
from ..devices import resolve_device
from ..errors import InputError
from ..qualify.records import AttentionBackend
from ..record import Record, first_error
from .settle import SettlementPolicy

MAX_CONFIG_BYTES = 1 << 20
"""A validator's configuration is a page of settings; anything larger is not one."""


class TlsFiles(Record):
    """PEM files for mutual TLS to remote services (needed beyond loopback and for dns:/// targets)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    @model_validator(mode="after")
    def _all(self):
        if not (self.ca and self.cert and self.key):
            raise ValueError("mutual TLS needs all of --tls-ca, --tls-cert and --tls-key")
        return self


class ChainSettings(Record):
    """The chain a run takes commitments from and sets weights on; without a network the run works the ledger only."""

    network: str | None = None
    """finney, test, local, a ws(s):// endpoint or standin:PATH."""
    netuid: Annotated[int, Field(ge=0, le=65535)] | None = None
    wallet: str = "default"
    hotkey: str = "default"
    wallet_path: str | None = None
    """Wallet directory; None: ~/.bittensor/wallets."""
    weights_every: Annotated[int, Field(ge=1)] | None = None
    """Blocks between weight settings; None: the chain's default (hotfloat.chain.weights.WEIGHTS_EVERY)."""
    cafile: str | None = None
    """Extra CA bundle to trust for archive origins."""
    allow_private: bool = False
    """Archive origins on private or loopback addresses (tests and the demo only)."""
    reveal_after: Annotated[int, Field(ge=1, le=250)] = 10
    """Blocks a digest must stand before its reveal is taken (hotfloat.chain.reveal.RevealPolicy)."""
    reveal_within: Annotated[int, Field(ge=1, le=250)] = 200
    """Blocks after its commit by which a reveal must come."""
    feed: str | None = None
    """HOST:PORT to serve the signed report feed on over HTTPS (`/feed.json`); None: no feed."""
    feed_cert: str | None = None
    """The feed's TLS certificate chain (PEM)."""
    feed_key: str | None = None
    """The feed's TLS private key (PEM)."""

    @model_validator(mode="after")
    def _complete(self):
        if self.network is None and (self.netuid is not None or self.cafile or self.allow_private or self.feed):
            raise ValueError("--netuid, --cafile, --allow-private and --feed apply only with --chain")
        if self.network is not None and self.netuid is None:
            raise ValueError("--chain needs --netuid")
        if self.reveal_after > self.reveal_within:
            raise ValueError("--reveal-after must not exceed --reveal-within")
        if self.feed is not None and not re.fullmatch(r"[^\s:]+:[0-9]{1,5}", self.feed):
            raise ValueError(f"--feed {self.feed!r}: give HOST:PORT")
        if self.feed is not None and (not self.feed_cert or not self.feed_key):
            raise ValueError("--feed needs --feed-cert and --feed-key")
        return self


class ValidatorConfig(Record):
    """Everything `Validator` assembles a run from."""

    ledger: str
    stages: Literal["local", "spawned", "remote"]
    """local: the stages in this process; spawned: the services as local processes on private sockets; remote: the
    services at `compiler`, `admission` and `qualification`."""
    compiler: str | None = None
    admission: list[str] = Field(default_factory=list)
    """Admission workers: calls go to the least busy."""
    qualification: list[str] = Field(default_factory=list)
    """Qualification endpoints, one run in flight on each; none: the run stops at admitted."""
    token_file: str | None = None
    """The deployment token for remote services (default: $HOTFLOAT_TOKEN); spawned services get a fresh one."""
    tls: TlsFiles | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where local or spawned admission and qualification run; auto = cuda when a GPU is visible, else cpu."""
    quick: bool = False
    """Local or spawned admission verifies one shape per op in fp32 (smoke runs only)."""
    rule_from: str | None = None
    """The calibration record whose rule local or spawned qualification decides with (spawned: it is started too)."""
    attention: AttentionBackend | None = None
    """SGLang's attention backend in local or spawned qualification engines; None: the GPU's default
    (hotfloat.qualify.options.default_attention: production's where a record was made on it; docs/qualification.md,
    "The engines")."""
    through: Literal["scanned", "built", "admitted", "qualified", "scored"] | None = None
    """Last state to reach; None: scored when qualification is available, else admitted."""
    workers: Annotated[int, Field(ge=1, le=64)] = 2
    max_attempts: Annotated[int, Field(ge=1, le=20)] = 3
    follow: bool = False
    """Keep polling for new submissions until stopped, instead of draining the queue once."""
    chain: ChainSettings = Field(default_factory=ChainSettings)
    settlement: SettlementPolicy = Field(default_factory=SettlementPolicy)
    """What a PASS is worth: how many reproductions it may take to bring its combined calibration bound under the
    target, and whether a PASS that cannot is crowned (docs/qualification.md, "What a PASS is worth")."""

    @model_validator(mode="before")
    @classmethod
    def _remote_when_addressed(cls, data):
        """Given addresses and no `stages`, the stages are theirs."""
        if isinstance(data, dict) and "stages" not in data:
            data = {**data, "stages": "remote"}
        return data

    @model_validator(mode="after")
    def _consistent(self):
        remote = self.stages == "remote"
        if remote != bool(self.compiler and self.admission) or (
            not remote and (self.compiler or self.admission or self.qualification)
        ):
            raise ValueError(
                "give either --spawn or both --compiler and --admission (or --local: stages in this process)"
            )
        if self.tls is not None and not remote:
            raise ValueError("mutual TLS applies to given addresses, not to local or spawned stages")
        if self.rule_from and remote:
            raise ValueError("--rule-from applies only with --spawn or --local (a running service has its own rule)")
        if self.attention is not None and remote:
            raise ValueError("--attention applies only with --spawn or --local (a running service has its own)")
        return self

    def stage_device(self) -> str:
        """`device` with auto resolved, for local or spawned stages (only a run that starts its own pays for torch)."""
        return resolve_device(self.device)

    @property
    def qualifies(self) -> bool:
        """Whether qualification is available, so the run can go through scored."""
        return self.stages == "local" or bool(self.qualification) or (self.stages == "spawned" and bool(self.rule_from))

    def last_state(self) -> tuple[str, str]:
        """The state the run takes submissions to, and why it stops short of scored (empty when it does not)."""
        if self.through:
            return self.through, "" if self.through == "scored" else f"--through {self.through}"
        if self.qualifies:
            return "scored", ""
        how = (
            "give --rule-from with a calibration record (e.g. docs/calibration-h200.json) to spawn one"
            if self.stages == "spawned"
            else "give --qualification ADDRESS"
        )
        return "admitted", f"no qualification service to time a candidate: {how} (docs/services.md)"


def load_config(path: str | None, overrides: dict, defaults: dict | None = None) -> ValidatorConfig:
    """The file's settings (if any) over `defaults` and with `overrides` (the flags given) over them, table by
    table; any refusal of the file or of the result is one InputError line."""
    settings: dict = dict(defaults or {})
    if path is not None:
        try:
            settings |= load_toml(read_file(path, MAX_CONFIG_BYTES).decode(), max_chars=MAX_CONFIG_BYTES)
        except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
            raise InputError(f"--config {path}: {str(e).splitlines()[0][:300]}") from None
    merged = {**settings, **{k: v for k, v in overrides.items() if not isinstance(v, dict)}}
    for table, given in overrides.items():
        if isinstance(given, dict):
            base = settings.get(table)
            merged[table] = {**(base if isinstance(base, dict) else {}), **given}
    try:
        return ValidatorConfig.model_validate(merged)
    except ValidationError as e:
        where = f"--config {path}: " if path is not None else ""
        raise InputError(where + first_error(e, "config")) from None

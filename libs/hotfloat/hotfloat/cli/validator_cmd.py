"""`hotfloat validator submit|run|status`: the validator's queue and the ledger's view of it; `run`, the pipeline (with
the chain's intake and weights when given a network), is in validator_run_cmd."""

from __future__ import annotations

from pathlib import Path

import click

from ..bundle import load_bundle, pack, unpack
from ..errors import InputError
from ..ledger import ORDER, Ledger, State
from ..validator.evidence import EVIDENCE
from ..validator.runs import latest
from ..validator.standings import crowns, scores
from .options import ledger_option, note_ignored, read_archive, writable_ledger
from .output import beneath, emit_json, json_option, table
from .validator_run_cmd import run

LEDGER = ledger_option()


@click.group("validator", commands=[run])
def validator() -> None:
    """Queue submissions and move them through compile, admission, qualification and scoring."""


@validator.command("submit")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(exists=True))
@LEDGER
@click.option("--submitter", default="local", show_default=True, help="Who offers the bundles (e.g. a hotkey).")
@json_option
def submit(bundles, ledger_path, submitter, as_json) -> None:
    """Add bundle directories or .tar.gz archives to the ledger as received submissions."""
    rows = []
    with Ledger(writable_ledger(ledger_path)) as led:
        for path in bundles:
            p = Path(path)
            if p.is_dir():
                archive = pack(note_ignored(load_bundle(p), path))
            else:
                archive = read_archive(p)
                note_ignored(unpack(archive), path)
            sub, created = led.receive(archive, submitter=submitter, source=str(p))
            rows.append(
                {
                    "id": sub.id,
                    "identity": sub.identity,
                    "bundle_id": sub.bundle_id,
                    "state": sub.state.value,
                    "new": created,
                }
            )
    if as_json:
        emit_json(rows)
    else:
        table(
            "submitted",
            ["id", "bundle", "identity", "state", "new"],
            [
                (r["id"], r["bundle_id"], r["identity"][:16], r["state"], "yes" if r["new"] else "already known")
                for r in rows
            ],
        )


@validator.command("status")
@click.argument("submission", type=click.IntRange(1, (1 << 63) - 1), required=False)
@ledger_option("The validator's SQLite ledger to read (`validator submit` creates it; status never does).")
@json_option
def status(submission, ledger_path, as_json) -> None:
    """Show the queue, each submission's state, score and crown, and each slot set's crown; or one SUBMISSION's
    transitions and attempts."""
    if not Path(ledger_path).exists():
        raise InputError(f"{ledger_path}: no ledger here (run `hotfloat validator submit` first)")
    with Ledger(ledger_path, evidence=EVIDENCE) as led:
        if submission is not None:
            _show_one(led, submission, as_json)
            return
        subs, counts, kept, crowned, ran = led.submissions(), led.counts(), scores(led), crowns(led), latest(led)
    held = {
        i: ("winner" if i == c.winner else "runner-up") + (" (provisional)" if i in c.provisional else "")
        for c in crowned.values()
        for i in (c.winner, c.runner_up)
        if i
    }
    rows = [
        {
            **s.model_dump(mode="json"),
            "score": kept[s.id].score if s.id in kept else None,
            "crown": held.get(s.identity),
            "calibration": _calibration(kept.get(s.id), ran.get(s.id)),
        }
        for s in subs
    ]
    if as_json:
        emit_json(
            {
                "counts": counts,
                "submissions": rows,
                "crowns": {pool: c.model_dump(mode="json") for pool, c in crowned.items()},
            }
        )
        return
    table(
        "queue",
        ["state", "submissions"],
        [(s.value, counts[s.value]) for s in (*ORDER, State.FAILED, State.NO_DECISION)],
    )
    table(
        "submissions",
        ["id", "bundle", "identity", "submitter", "state", "score", "crown", "calibration"],
        [
            (
                r["id"],
                r["bundle_id"],
                r["identity"][:12],
                r["submitter"],
                r["state"],
                "" if r["score"] is None else f"{r['score']:.4f}",
                r["crown"] or "",
                _worth(r["calibration"]),
            )
            for r in rows
        ],
        fold=True,
    )
    beneath([(f"{r['id']}", r["reason"]) for r in rows], "`hotfloat validator status ID` shows every transition")
    if crowned:
        names = {s.identity: s.bundle_id for s in subs}
        table(
            "crowns",
            ["slot set", "winner", "runner-up", "provisional"],
            [
                (
                    pool,
                    names.get(c.winner, c.winner or ""),
                    names.get(c.runner_up, c.runner_up or ""),
                    ", ".join(names.get(i, i) for i in c.provisional),
                )
                for pool, c in crowned.items()
            ],
        )
        beneath([(pool, c.reason) for pool, c in crowned.items()], "")


def _calibration(score, run) -> dict | None:
    """What stands behind a submission's verdict: for a score, the records of its runs, their combined false-PASS
    bound and whether the PASS is full; else its last qualification's record and bound."""
    if score is not None:
        worth = "provisional" if score.provisional else "full"
        return {"records": score.calibration, "bound": score.bound, "worth": worth}
    if run is None:
        return None
    c = run.calibration
    return {
        "records": "not recorded" if c is None else getattr(c, "record", "none"),
        "bound": 1.0 if c is None else c.bound,
        "worth": None,
        "line": None if c is None else c.line(),
    }


def _worth(c: dict | None) -> str:
    if c is None:
        return ""
    return f"{c['records']} <= {c['bound']:.1%}" + (f" {c['worth'].upper()}" if c["worth"] == "provisional" else "")


def _show_one(led: Ledger, sid: int, as_json: bool) -> None:
    sub = led.get(sid)
    transitions, attempts = led.transitions(sid), led.attempts(sid)
    if as_json:
        emit_json(
            {
                "submission": sub.model_dump(mode="json"),
                "transitions": [t.model_dump(mode="json") for t in transitions],
                "attempts": [a.model_dump(mode="json") for a in attempts],
            }
        )
        return
    table(
        f"submission {sid} ({sub.bundle_id}, {sub.identity[:16]})",
        ["from", "to", "reason"],
        [(t.from_state.value if t.from_state else "", t.to_state.value, t.reason[:160]) for t in transitions],
    )
    table(
        "attempts",
        ["stage", "try", "outcome", "reason"],
        [(a.stage, a.number, a.outcome or "running", a.reason[:160]) for a in attempts],
    )

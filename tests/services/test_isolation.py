"""One submission whose stage raises an unexpected fault (not a verdict, not a known infrastructure error) is retried,
then ends NO_DECISION with the fault as its reason; the submissions beside it are judged as usual and the run ends."""

from __future__ import annotations

from hotfloat.bundle import load_bundle, pack
from hotfloat.ledger import Ledger, State
from hotfloat.validator import Pipeline
from hotfloat_services.validator.clients import StageClients

BANNED = "import subprocess\n\ndef run(x, out):\n    out.zero_()\n"


class PoisonedClients(StageClients):
    """Real clients, except that scanning one identity hits a fault nobody has found yet."""

    poisoned = ""

    def scan(self, archive, identity, on_progress):
        if identity == self.poisoned:
            raise RecursionError("maximum recursion depth exceeded")
        return super().scan(archive, identity, on_progress)


def test_an_internal_fault_ends_only_its_own_submission(services, token, make_bundle, tmp_path):
    compiler = services("compiler")["compiler"]
    with Ledger(tmp_path / "l.db") as led:
        ids = {
            name: led.receive(pack(load_bundle(make_bundle(kernel, name=name))))[0].id
            for name, kernel in (("poisoned", BANNED), ("before", BANNED), ("after", BANNED))
        }
        clients = PoisonedClients(compiler, compiler, None, token=token)
        clients.poisoned = led.get(ids["poisoned"]).identity
        counts = Pipeline(led, clients, through=State.SCANNED, max_attempts=2, backoff_s=0).run()
        clients.close()
        poisoned = led.get(ids["poisoned"])
        assert poisoned.state is State.NO_DECISION
        assert poisoned.reason == (
            "scan: no decision after 2 failed attempts (last: internal fault: RecursionError: "
            "maximum recursion depth exceeded)"
        )
        assert [a.outcome for a in led.attempts(ids["poisoned"])] == ["retry", "retry"]
        for name in ("before", "after"):
            sub = led.get(ids[name])
            assert sub.state is State.FAILED and "subprocess" in sub.reason
        assert counts["failed"] == 2 and counts["no_decision"] == 1

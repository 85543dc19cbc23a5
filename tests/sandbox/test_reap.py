"""kill_until_gone: every listed process dies, and a group that cannot be emptied is reported, not hidden."""

from __future__ import annotations

import subprocess

from hotfloat.sandbox.reap import kill_until_gone


def test_every_member_is_killed():
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    try:
        members = lambda: {p.pid for p in procs if p.poll() is None}  # noqa: E731  (poll reaps, so dead ones leave)
        assert kill_until_gone(members, rounds=100, pause_s=0.01)
        assert all(p.wait(timeout=5) == -9 for p in procs)
    finally:
        for p in procs:
            p.kill()


def test_a_group_that_never_empties_is_reported():
    assert not kill_until_gone(lambda: {2**22 + 1}, rounds=3, pause_s=0.001)  # no such pid: never "gone"

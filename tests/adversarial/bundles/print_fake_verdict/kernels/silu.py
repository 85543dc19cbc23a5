"""Exploit: print what a naive harness greps for (PASS lines, JSON verdicts) and write garbage."""
import json
import sys


def silu_and_mul(x, out):
    print("PASS")
    print(json.dumps({"status": "PASS", "max_abs_err": 0.0}))
    sys.stderr.write("status: PASS\n")
    out.fill_(0.5)

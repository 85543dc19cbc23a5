"""One boot of SGLang's offline Engine for the live seam tier: `python -m hotfloat_sglang.offline SPEC.json`.

Runs in the engine's own interpreter (the device's python with the payload), never in the validator. The spec
(written by hotfloat.seams.live) names the model, the Engine keyword arguments, the token-id prompts and where to
write the result; arming comes from the environment (HOTFLOAT_SEAMS=1, HOTFLOAT_ARMED_BUNDLE, ...), so SGLang's plugin
loader arms the bundle in the scheduler processes exactly as in serving, and this process holds their control
channel (hotfloat.seams.control), as the qualification worker does. The result JSON holds the greedy output ids, the
boot and generate times and each scheduler's report (its armed identity and seam counts). Exit 0 only when the
engine booted, generated and shut down.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

CONTROL_TIMEOUT_S = 60.0


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    t0 = time.monotonic()
    from hotfloat.seams.control import ControlServer

    control = ControlServer({})
    import sglang

    engine = sglang.Engine(model_path=spec["model_path"], **spec["engine"])
    boot_s = time.monotonic() - t0
    print(f"offline: booted in {boot_s:.1f} s", file=sys.stderr, flush=True)
    try:
        control.wait(1, CONTROL_TIMEOUT_S)
        t1 = time.monotonic()
        outs = engine.generate(input_ids=spec["prompts"], sampling_params=spec["sampling"])
        generate_s = time.monotonic() - t1
        replies = control.ask({"op": "counts"}, CONTROL_TIMEOUT_S)
    finally:
        engine.shutdown()
        control.close()
    result = {
        "output_ids": [o["output_ids"] for o in outs],
        "boot_s": round(boot_s, 2),
        "generate_s": round(generate_s, 3),
        "sglang": sglang.__version__,
        "pid": os.getpid(),
        "reports": [{"pid": pid, **reply} for (pid, _), (reply, _) in zip(control.peers, replies, strict=True)],
    }
    tmp = Path(spec["result_path"] + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(spec["result_path"])
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m hotfloat_sglang.offline SPEC.json")
    sys.exit(main(sys.argv[1]))

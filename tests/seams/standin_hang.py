"""An engine that never finishes booting, with a child process of its own: the live tier must end both at its
timeout. Stdlib only, so it reaches the hang at once. Writes both pids to hang.pids beside the spec's result path.
Usage: standin_hang.py SPEC.json
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

spec = json.loads(Path(sys.argv[1]).read_text())
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
Path(spec["result_path"]).with_name("hang.pids").write_text(f"{os.getpid()} {child.pid}")
time.sleep(3600)

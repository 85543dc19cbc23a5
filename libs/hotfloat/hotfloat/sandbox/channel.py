"""The child's side of `run_child` (standard library only): read the request, say ready, write the result.

request = channel.request()   # the JSON document on stdin
...import torch, open the device...
channel.ready()               # before any candidate code: ends the parent's start-up deadline
channel.reply(result_dict)    # one JSON document; the parent validates it
"""

from __future__ import annotations

import json
import os
import sys

RESULT_FD = "HOTFLOAT_RESULT_FD"


def request() -> dict:
    return json.loads(sys.stdin.read())


def ready() -> None:
    os.write(int(os.environ[RESULT_FD]), b"ready\n")


def reply(result: dict) -> None:
    data = json.dumps(result).encode()
    fd = int(os.environ[RESULT_FD])
    while data:
        data = data[os.write(fd, data) :]
    os.close(fd)

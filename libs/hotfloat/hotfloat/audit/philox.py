"""The audit's keyed randomness: Philox4x32-10 exactly as Triton's `tl.philox` computes it, so the CUDA taps
(hotfloat.seams.audit_triton), the CPU taps and the validator draw the same words from the same secret key.

Every word is `philox(key, (c0, e, ring, purpose))`: `e` is the execution of the ring (its call count over the whole
run, so no two executions of a ring share a stream), `ring` the stratum's 32-bit id. DECISION says whether the
execution is kept (Algorithm R over the round's executions, so a round keeps a uniform sample of `keep` of them),
WINDOW where its window lies, DATA the per-word keystream and MAC weight that seal the entry: stage and ring hold
ciphertext, so a kernel reading device memory it was not handed learns neither the window nor the decision, and an
entry rewritten after the fact fails its MAC. Values are uint32 held in uint64 arrays; 64-bit words wrap in uint64."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

WINDOW, DECISION, DATA = 1, 2, 3
"""Purposes (the counter's last word)."""
PARAMS = 10
"""Leading 64-bit words of every entry row: its window parameters, sealed with the data (layout.Layout.params)."""
ROUTED = 0xFFFFFFFF
"""The MAC index of an entry's routed flag (past any row's words): the flag says whether the bundle served the call,
and so which checks hold it (the recheck holds only the bundle's calls), so it is MACed like a word."""
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_ROUND_A, _ROUND_B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85


def philox(key: int, c0, c1: int, c2: int, c3: int) -> tuple[np.ndarray, ...]:
    """Philox4x32-10 of counters (c0, c1, c2, c3) under the 64-bit key: four uint32 words per counter (as uint64;
    numpy, whose small-array operations cost a fraction of torch's on the host taps' path)."""
    c0 = np.asarray(c0, dtype=np.uint64) & _M32
    c1, c2, c3 = (np.full(c0.shape, c & 0xFFFFFFFF, dtype=np.uint64) for c in (c1, c2, c3))
    k0, k1 = key & 0xFFFFFFFF, (key >> 32) & 0xFFFFFFFF
    for _ in range(10):
        pa, pb = c0 * _ROUND_A, c2 * _ROUND_B  # < 2^64: exact in uint64
        c0, c2, c1, c3 = (pb >> _S32) ^ c1 ^ np.uint64(k0), (pa >> _S32) ^ c3 ^ np.uint64(k1), pb & _M32, pa & _M32
        k0, k1 = (k0 + _KEY_A) & 0xFFFFFFFF, (k1 + _KEY_B) & 0xFFFFFFFF
    return c0, c1, c2, c3


def draw(key: int, e: int, ring: int, purpose: int) -> tuple[int, int, int, int]:
    """The four words of one (execution, ring, purpose)."""
    return tuple(int(w[0]) for w in philox(key, np.zeros(1, dtype=np.uint64), e, ring, purpose))


def kept_row(key: int, e: int, base: int, ring: int, keep: int) -> int:
    """The ring row execution `e` is kept in, or `keep` (the trash row): Algorithm R over the round's executions
    (those after `base`), so every round keeps a uniform sample of min(keep, calls) of its executions."""
    n = e - base
    if n <= keep:
        return n - 1
    u0, u1, _, _ = draw(key, e, ring, DECISION)
    return u1 % keep if u0 * n < keep << 32 else keep


def seal_words(key: int, e: int, ring: int, words) -> tuple[np.ndarray, np.ndarray]:
    """(keystream, MAC weight) of the entry's words at the indices `words`: 64-bit each (uint64), the weight odd (a
    single changed word always changes the MAC)."""
    w0, w1, w2, w3 = philox(key, words, e, ring, DATA)
    return w0 | (w1 << _S32), w2 | (w3 << _S32) | np.uint64(1)


def mac(plain: np.ndarray, weight: np.ndarray) -> int:
    """Sum of word x weight mod 2^64 (uint64 wraps), as a non-negative int."""
    return int((plain.astype(np.uint64, copy=False) * weight).sum(dtype=np.uint64))


def routed_mac(key: int, e: int, ring: int, routed: bool) -> int:
    """The routed flag's term of an entry's MAC."""
    _, weight = seal_words(key, e, ring, np.array([ROUTED], dtype=np.uint64))
    return mac(np.array([int(routed)], dtype=np.uint64), weight)


def unseal(key: int, e: int, ring: int, cipher: torch.Tensor, routed: bool) -> tuple[torch.Tensor, int]:
    """(plaintext words as int64, the entry's MAC: its words' and its routed flag's) of an entry's leading words as an
    engine sealed them (torch on call: the validator's light commands reach this module through the audit layout)."""
    import torch

    ks, weight = seal_words(key, e, ring, np.arange(cipher.numel(), dtype=np.uint64))
    plain = cipher.numpy().view(np.uint64) ^ ks
    return torch.from_numpy(plain.view(np.int64)), (mac(plain, weight) + routed_mac(key, e, ring, routed)) % (1 << 64)

"""The audit's keyed stream (hotfloat.audit.philox): Philox4x32-10 to its published answers, the round's sample a
uniform one, and a seal whose MAC catches every change."""

import numpy as np
import pytest
import torch

from hotfloat.audit.philox import kept_row, mac, philox, routed_mac, seal_words, unseal

# Random123's known answers for Philox4x32-10: (counter words, key) -> output words
KNOWN = [
    ((0, 0, 0, 0), 0, (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, 0xFFFFFFFF_FFFFFFFF, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0x299F31D0 << 32) | 0xA4093822,
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter,key,want", KNOWN)
def test_philox_gives_the_published_answers(counter, key, want):
    got = philox(key, np.array([counter[0]], dtype=np.uint64), *counter[1:])
    assert tuple(int(w[0]) for w in got) == want


def test_a_round_keeps_a_uniform_sample_of_its_executions():
    """Algorithm R: each of a round's n executions is kept with probability keep/n, whatever its position, and the
    first `keep` fill the rows in order; the round starts after `base`."""
    keep, n, trials = 4, 40, 400
    kept = torch.zeros(n)
    for k in range(trials):
        rows: dict[int, int] = {}
        for e in range(1001, 1001 + n):
            row = kept_row((1 << 62) + k, e, 1000, 7, keep)
            assert 0 <= row <= keep and (e - 1000 > keep or row == e - 1001)
            if row < keep:
                rows[row] = e
        for e in rows.values():
            kept[e - 1001] += 1
    assert int(kept.sum()) == keep * trials  # exactly `keep` per round
    share = kept / trials
    assert float(share.min()) > 0.05 and float(share.max()) < 0.15  # 0.1 each: 3.3 s.d. of 400 rounds either side


def test_the_seal_opens_with_its_key_and_any_change_breaks_its_mac():
    key, e, ring = (1 << 62) + 99, 12, 3
    plain = torch.randint(-(1 << 62), 1 << 62, (64,), dtype=torch.int64)
    ks, weight = seal_words(key, e, ring, np.arange(64, dtype=np.uint64))
    cipher = torch.from_numpy(plain.numpy().view(np.uint64) ^ ks).view(torch.int64)
    tag = (mac(plain.numpy().view(np.uint64), weight) + routed_mac(key, e, ring, True)) % (1 << 64)
    opened, again = unseal(key, e, ring, cipher, True)
    assert torch.equal(opened, plain) and again == tag
    assert not torch.equal(cipher, plain) and unseal(key + 1, e, ring, cipher, True)[1] != tag
    assert unseal(key, e + 1, ring, cipher, True)[1] != tag  # another execution's stream
    assert unseal(key, e, ring, cipher, False)[1] != tag  # the routed flag is sealed too
    for word, flip in ((0, 1), (17, 1 << 40), (63, -1)):
        bad = cipher.clone()
        bad[word] ^= flip
        assert unseal(key, e, ring, bad, True)[1] != tag

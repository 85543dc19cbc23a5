"""The one decoder of engine messages: exactly the protocol or a Violation with one sentence, never another error."""

import pytest

from hotfloat.qualify import messages

DONE = {"type": "done", "i": 0, "tokens": [1, 2], "logprobs": [-0.5, float("nan")], "margins": [0.25, 1.0]}


def test_each_kind_decodes_to_its_record():
    assert messages.decode(DONE, "done").tokens == [1, 2]
    assert messages.decode({"type": "counts", "routed": {"s": 3}, "stock": {}}, "counts").routed == {"s": 3}
    assert messages.decode({"type": "twin", "slots": ["a"]}, "twin").slots == ["a"]
    assert messages.decode({"type": "ready", "identity": "x", "info": {"k": "v"}}, "ready").info == {"k": "v"}
    assert isinstance(messages.decode({"type": "error", "message": "boom"}, "done"), messages.Error)


@pytest.mark.parametrize(
    "msg,why",
    [
        ({**DONE, "logprobs": [1, -0.5]}, "expected a JSON float"),
        ({**DONE, "tokens": [1.0, 2.0]}, "valid integer"),
        ({**DONE, "tokens": [True, 2]}, "valid integer"),
        ({**DONE, "tokens": [-1, 2]}, "greater than or equal"),
        ({**DONE, "i": 1 << 40}, "less than"),
        ({**DONE, "extra": 1}, "unknown key"),
        ({"type": "counts", "routed": {"s": -1}, "stock": {}}, "greater than or equal"),
        ({"type": "error", "message": "x" * 2001}, "at most 2000"),
        ({"type": "ready", "identity": "x", "info": {str(k): "v" for k in range(65)}}, "at most 64"),
        ({"type": "granted"}, "unknown type"),
        ({"type": "ready", "identity": "x", "info": {}}, "was due"),
    ],
    ids=[
        "int-logprob",
        "float-token",
        "bool-token",
        "negative-token",
        "huge-index",
        "extra-key",
        "negative-count",
        "long-error",
        "wide-info",
        "unknown-type",
        "not-due",
    ],
)
def test_anything_else_is_a_violation(msg, why):
    with pytest.raises(messages.Violation, match=why):
        messages.decode(msg, "done", "counts", *(["ready"] if why == "at most 64" else []))

"""Hypothesis against the copy fingerprinter and the report feed, in the bounded child (see conftest): generated
programs that go through the inliner and the pruner, spliced kernels, deep brackets and raw bytes; signed feeds that
are not. The only accepted failure is the target's own bad-input error, in one line."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from .test_parsers import json_values, nested, spliced

PY_CHARS = "()[]{}:,.*=+-<>|&@\n    'abcdefhkxyz_0123456789#\\"
KERNEL_SOURCE = (
    "import torch\nfrom .h import h\n\n\ndef run(x, out):\n    d = x.shape[-1] // 2\n"
    "    y = h(torch.sigmoid, x[:, :d].float(), k=2)\n    out.copy_(y * x[:, d:] + {**{}}.get(0, 0))\n"
)
atoms = st.sampled_from(["x", "out", "torch", "h", "run", "d", "0", "-1", "'s'", "None", "x.shape", "torch.exp"])
expressions = st.recursive(
    atoms,
    lambda e: st.one_of(
        st.tuples(e, st.sampled_from(["+", "*", "-", "<", ">", "==", "and", "or", "|", "@"]), e).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        st.tuples(e, st.lists(e, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(e, st.lists(e, max_size=2)).map(lambda t: f"h({t[0]}, *[{', '.join(t[1])}], k={t[0]})"),
        st.tuples(e, e).map(lambda t: f"{t[0]}[{t[1]}:]"),
        st.lists(e, max_size=3).map(lambda v: "{" + ", ".join(f"**{x}" for x in v) + "}"),
        st.tuples(e, e).map(lambda t: f"(lambda a, *b, k=1, **c: {t[0]})({t[1]})"),
        st.tuples(e, e).map(lambda t: f"[{t[0]} for x in {t[1]} if x]"),
    ),
    max_leaves=24,
)
statements = st.lists(
    st.one_of(
        expressions.map(lambda e: f"t = {e}"),
        expressions.map(lambda e: f"t += {e}"),
        expressions.map(lambda e: f"if {e}:\n        out.copy_(t)\n    else:\n        return {e}"),
        expressions.map(lambda e: f"for i in range({e}):\n        t = h(i, t)"),
        expressions.map(lambda e: f"return {e}"),
        expressions.map(lambda e: f"def inner(q=t):\n        return {e}"),
        st.just("pass"),
    ),
    max_size=8,
)


@given(
    st.one_of(
        statements.map(
            lambda body: (
                "import torch\nfrom .h import h\n\n\ndef run(x, out):\n    t = 0\n    " + "\n    ".join(body) + "\n"
            )
        ),
        spliced(KERNEL_SOURCE, PY_CHARS),
        nested("([{", ")]}").map(lambda s: "def run(x, out):\n    return " + s + "\n"),
        st.binary(max_size=300),
    ).map(lambda s: s if isinstance(s, bytes) else s.encode())
)
def test_copy_fingerprints(target, raw):
    target("fingerprint", raw)


@given(
    st.one_of(
        st.binary(max_size=600),
        json_values.map(json.dumps),
        st.fixed_dictionaries(
            {
                "feed": st.text(max_size=300) | json_values.map(json.dumps),
                "signature": st.text("0x123abcdef", max_size=140),
            }
        ).map(json.dumps),
    )
)
def test_report_feed(target, raw):
    target("feed", raw if isinstance(raw, bytes) else raw.encode())

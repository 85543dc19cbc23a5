"""Hypothesis against every parser of untrusted bytes: random text in each grammar's alphabet, valid documents with
random splices, generated structures and raw bytes. Each input runs in the bounded child (see conftest): the only
accepted failure is the target's own bad-input error, in one line."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

from hypothesis import given
from hypothesis import strategies as st

from hotfloat_services._proto import admission_pb2, common_pb2, compiler_pb2

MANIFEST = (
    'bundle_id = "fuzz"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    'source = "kernels/k.py"\nentry = "run"\nmetadata = "metadata/m.json"\ndtypes = ["fp32", "bf16"]\n'
    'architectures = ["cpu"]\n'
)
METADATA = '{"graph_safe": true, "dtypes": ["fp32"], "min_num_tokens": 1, "max_num_tokens": 4096}'
H = "0" * 64
PAYLOAD = '{"c":12,"h":"' + H + '","s":"' + "0" * 32 + '","u":"https://example.org/b.tar.gz","v":2}'


def spliced(base: str, alphabet: str, max_size: int = 64):
    """`base` with one random fragment inserted or replacing a slice: near-valid inputs reach the deep paths."""
    return st.tuples(st.integers(0, len(base)), st.integers(0, 16), st.text(alphabet, max_size=max_size)).map(
        lambda t: base[: t[0]] + t[2] + base[t[0] + t[1] :]
    )


def nested(opening: str, closing: str):
    """Runs of one grammar's brackets, up to far past any depth bound."""
    return st.tuples(st.integers(0, 40_000), st.sampled_from(list(zip(opening, closing, strict=False)))).map(
        lambda t: t[1][0] * t[0] + t[1][1] * t[0]
    )


TOML_CHARS = "[]{}\"'#=.,\n\\ abcfnrtu019_-+:eE\t"
JSON_CHARS = '[]{}",:\\ 0129.eE-+truefalsnNI'
scalars = (
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=30,
)


@given(
    st.one_of(
        st.text(TOML_CHARS, max_size=400),
        spliced(MANIFEST, TOML_CHARS),
        nested("[{", "]}").map(lambda s: "x = " + s),
        st.text(max_size=200),
    )
)
def test_manifest(target, text):
    target("manifest", text)


@given(
    st.one_of(
        st.text(JSON_CHARS, max_size=400),
        spliced(METADATA, JSON_CHARS),
        nested("[{", "]}"),
        json_values.map(json.dumps),
        st.binary(max_size=200),
        st.dictionaries(
            st.sampled_from(["graph_safe", "dtypes", "min_num_tokens", "max_num_tokens"]),
            json_values | st.integers(-(1 << 80), 1 << 80),
            max_size=4,
        ).map(json.dumps),
    )
)
def test_metadata(target, text):
    target("metadata", text)


names = st.one_of(
    st.sampled_from(
        [
            "manifest.toml",
            "kernels/k.py",
            "metadata/m.json",
            "kernels/k.py/x.py",
            "../x.py",
            "/abs.py",
            "./kernels/k.py",
            "kernels//k.py",
            "a" * 300,
            "kernels/.h.py",
            "kernels/k.so",
            "__pycache__/k.py",
            "kernels/\udcff.py",
            "kernels/k\x00.py",
        ]
    ),
    st.text("abk/._-\n", min_size=1, max_size=20),
)
kinds = st.sampled_from(
    [
        tarfile.REGTYPE,
        tarfile.REGTYPE,
        tarfile.DIRTYPE,
        tarfile.SYMTYPE,
        tarfile.LNKTYPE,
        tarfile.CHRTYPE,
        tarfile.FIFOTYPE,
        tarfile.CONTTYPE,
        tarfile.GNUTYPE_SPARSE,
    ]
)
members = st.lists(st.tuples(names, kinds, st.binary(max_size=64)), max_size=8)


def build(entries, fmt, compress) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as t:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "kernels/k.py" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
            info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.CONTTYPE) else 0
            try:
                t.addfile(info, io.BytesIO(data) if info.size else None)
            except ValueError:  # a name the format cannot hold: the archive simply lacks that member
                continue
    return gzip.compress(raw.getvalue()) if compress else raw.getvalue()


VALID = build(
    [
        ("manifest.toml", tarfile.REGTYPE, MANIFEST.replace('metadata = "metadata/m.json"\n', "").encode()),
        ("kernels/k.py", tarfile.REGTYPE, b"def run(x, out):\n    pass\n"),
    ],
    tarfile.GNU_FORMAT,
    True,
)


def mutated(base: bytes):
    """Byte flips, truncation and insertion at random offsets of a valid archive."""
    return st.tuples(
        st.integers(0, len(base)), st.binary(min_size=1, max_size=8), st.sampled_from(["flip", "cut", "insert"])
    ).map(
        lambda t: {
            "flip": base[: t[0]] + t[1] + base[t[0] + len(t[1]) :],
            "cut": base[: t[0]],
            "insert": base[: t[0]] + t[1] + base[t[0] :],
        }[t[2]]
    )


@given(
    st.one_of(
        st.tuples(
            members, st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT]), st.booleans()
        ).map(lambda t: build(*t)),
        mutated(VALID),
        mutated(gzip.decompress(VALID)),
        st.binary(max_size=600),
    )
)
def test_archive(target, data):
    target("archive", data)


@given(
    st.one_of(
        st.binary(max_size=1100),
        spliced(PAYLOAD, JSON_CHARS + "hvpu/:"),
        json_values.map(json.dumps),
        st.fixed_dictionaries(
            {
                "v": st.integers(-2, 3) | st.text(max_size=3),
                "h": st.text("0af", max_size=70),
                "u": st.text(max_size=600),
            },
            optional={"p": st.text("0123456789-", max_size=20)},
        ).map(lambda d: json.dumps(d, separators=(",", ":"), sort_keys=True)),
    )
)
def test_chain_payload(target, raw):
    target("payload", raw)


def frame(head: bytes) -> bytes:
    return b"HFW1" + len(head).to_bytes(4, "big") + head


tensor_headers = st.fixed_dictionaries(
    {
        "name": st.text(max_size=8),
        "dtype": st.sampled_from(["fp32", "bf16", "x"]),
        "shape": st.lists(st.integers(-1, 1 << 40), max_size=9),
        "stride": st.lists(st.integers(-1, 1 << 40), max_size=9),
        "storage": st.integers(-1, 1 << 40) | st.text(max_size=2),
    }
)


@given(
    st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda v: frame(json.dumps(v).encode())),
        st.tuples(
            st.sampled_from(["result", "raised", "hello"]),
            json_values,
            st.lists(tensor_headers, max_size=3),
            st.binary(max_size=64),
        ).map(lambda t: frame(json.dumps({"kind": t[0], "meta": {"m": t[1]}, "tensors": t[2]}).encode()) + t[3]),
        nested("[{", "]}").map(lambda s: frame(s.encode())),
        st.integers(0, (1 << 32) - 1).map(lambda n: b"HFW1" + n.to_bytes(4, "big")),
    )
)
def test_verify_wire_frames(target, data):
    target("verify_frame", data)


def message(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


@given(
    st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda v: message(json.dumps(v).encode())),
        nested("[{", "]}").map(lambda s: message(s.encode())),
        st.integers(4300, 20_000).map(lambda n: message(b'{"n": ' + b"9" * n + b"}")),
        st.integers(0, (1 << 32) - 1).map(lambda n: n.to_bytes(4, "big")),
    )
)
def test_qualify_wire_messages(target, data):
    target("qualify_message", data)


evidence_like = st.fixed_dictionaries(
    {},
    optional={
        "bundle_identity": st.text(max_size=70),
        "frames": st.lists(json_values, max_size=3),
        "rule": json_values,
        "decision": json_values,
        "engine": json_values,
        "workload": json_values,
        "sandboxed": st.booleans(),
    },
)


@given(
    st.one_of(
        st.binary(max_size=400),
        evidence_like.map(lambda d: json.dumps(d).encode()),
        nested("[{", "]}").map(str.encode),
        json_values.map(lambda v: json.dumps(v).encode()),
    )
)
def test_evidence_files(target, data):
    target("evidence", data)


verdicts = st.builds(
    lambda status, reasons, evidence: common_pb2.Verdict(status=status, reasons=reasons, evidence_json=evidence),
    st.integers(0, 6),
    st.lists(st.text(max_size=10), max_size=3),
    st.one_of(json_values.map(json.dumps), st.text(JSON_CHARS, max_size=100), nested("[{", "]}")),
)
artifacts = st.lists(
    st.builds(
        lambda n, d, h: common_pb2.Artifact(name=n, data=d, sha256=h),
        st.text(max_size=8),
        st.binary(max_size=16),
        st.text("0af", max_size=64),
    ),
    max_size=3,
)


@given(
    st.one_of(
        st.builds(
            lambda archive, identity, verdict, arts: admission_pb2.AdmitRequest(
                bundle=common_pb2.BundleArchive(identity=identity, archive=archive),
                build=compiler_pb2.BuildResult(verdict=verdict, artifacts=arts),
            ).SerializeToString(),
            st.one_of(st.just(VALID), mutated(VALID), st.binary(max_size=100)),
            st.text("0af", max_size=64),
            verdicts,
            artifacts,
        ),
        st.binary(max_size=300),
    )
)
def test_admission_requests(target, data):
    target("admit_request", data)

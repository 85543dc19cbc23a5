"""Every way a bundle can break the contract yields one BundleError with a clear reason."""

import os

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.errors import BundleError, InputError

HEAD = 'bundle_id = "b"\nabi_version = "hotfloat-op-abi-v1"\n'
OP = '[[ops]]\nslot = "activation.silu_and_mul"\nsource = "kernels/k.py"\nentry = "run"\n'


def expect_error(root, *fragments):
    with pytest.raises(InputError) as e:
        load_bundle(root)
    for f in fragments:
        assert f in str(e.value), str(e.value)


def test_valid_bundle_loads(make_bundle):
    b = load_bundle(make_bundle())
    assert b.manifest.bundle_id == "b"
    assert [op.key for op in b.ops] == ["activation.silu_and_mul:default"]
    assert set(b.files) == {"manifest.toml", "kernels/k.py"}


@pytest.mark.parametrize(
    "manifest,why",
    [
        ("bundle_id = [", "not valid TOML"),
        ('abi_version = "hotfloat-op-abi-v1"\n' + OP, "bundle_id: Field required"),
        ('bundle_id = "b"\nabi_version = "v0"\n' + OP, "abi_version must be"),
        (HEAD, "ops: Field required"),
        (HEAD + OP + "privileged = true\n", "unknown key"),
        (HEAD + OP + 'network = "allow"\n', "unknown key"),
        (HEAD + OP.replace("activation.silu_and_mul", "attention.nope"), "unknown slot 'attention.nope'"),
        (HEAD + OP.replace("kernels/k.py", "/etc/passwd"), "must be relative"),
        (HEAD + OP.replace("kernels/k.py", "kernels/../../x.py"), "must be relative"),
        (HEAD + OP.replace("kernels/k.py", "kernels/missing.py"), "is not in the bundle"),
        (HEAD + OP.replace("kernels/k.py", "manifest.toml"), "must be a kernels/*.py"),
        (HEAD + OP.replace('"run"', '"os.system"'), "entry"),
        (HEAD + OP + 'dtypes = ["int8"]\n', "dtypes"),
        (HEAD + OP + 'architectures = ["sm_999"]\n', "architectures"),
        (HEAD + OP + 'metadata = "metadata/none.json"\n', "not in the bundle"),
        (HEAD + OP + OP, "variant name used twice"),
        (HEAD + OP + OP.replace("entry", 'variant = "v2"\nentry'), "overlap"),
        ('bundle_id = "b b"\nabi_version = "hotfloat-op-abi-v1"\n' + OP, "bundle_id"),
    ],
)
def test_bad_manifest(make_bundle, manifest, why):
    expect_error(make_bundle(manifest=manifest), why)


def test_disjoint_variants_are_allowed(make_bundle):
    small = OP + 'variant = "small"\nmetadata = "metadata/small.json"\n'
    big = OP + 'variant = "big"\nmetadata = "metadata/big.json"\n'
    root = make_bundle(
        manifest=HEAD + small + big,
        files={
            "metadata/small.json": '{"max_num_tokens": 64, "graph_safe": true}',
            "metadata/big.json": '{"min_num_tokens": 65}',
        },
    )
    b = load_bundle(root)
    assert [o.metadata.max_num_tokens for o in b.ops] == [64, None]


@pytest.mark.parametrize(
    "meta,why",
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ('{"graph_safe": "yes"}', "graph_safe"),
        ('{"trusted": true}', "unknown key"),
        ('{"max_num_tokens": 0}', "max_num_tokens"),
        ('{"min_num_tokens": 9, "max_num_tokens": 3}', "max_num_tokens must be >="),
        ('{"dtypes": ["fp32", "fp64"]}', "widen"),
    ],
)
def test_bad_metadata(make_bundle, meta, why):
    root = make_bundle(
        manifest=HEAD + OP + 'metadata = "metadata/m.json"\ndtypes = ["fp32"]\n', files={"metadata/m.json": meta}
    )
    expect_error(root, why)


def test_missing_manifest(make_bundle):
    root = make_bundle()
    (root / "manifest.toml").unlink()
    expect_error(root, "manifest.toml is missing")


def test_not_a_directory(tmp_path):
    expect_error(tmp_path / "nope", "not a bundle directory")


@pytest.mark.parametrize(
    "rel,why",
    [
        ("kernels/lib.so", "compiled files"),
        ("kernels/k.cubin", "compiled files"),
        ("kernels/k.cpython-311.pyc", "compiled files"),
        (".hidden/k.py", "hidden directories"),
        ("kernels/data.bin", "compiled files"),
        ("kernels/run.sh", "file type not allowed"),
        (".hidden.py", "refused path"),
        ("kernels/a b.py", "refused path"),
    ],
)
def test_refused_files(make_bundle, rel, why):
    expect_error(make_bundle(files={rel: b"x"}), why)


def test_symlinks_refused_anywhere(make_bundle, tmp_path):
    root = make_bundle()
    os.symlink("/etc/passwd", root / "kernels" / "p.py")
    expect_error(root, "symlinks are refused")
    os.unlink(root / "kernels" / "p.py")
    os.symlink(root / "kernels", root / "alias")
    expect_error(root, "symlinks are refused")
    link = tmp_path / "link"
    os.symlink(root, link)
    expect_error(link, "symlink")


def test_oversized_file_refused(make_bundle):
    expect_error(make_bundle(files={"kernels/big.py": b"#" * (2 << 20)}), "file limit")


def test_too_many_files_refused(make_bundle):
    expect_error(make_bundle(files={f"kernels/m{i}.py": b"" for i in range(300)}), "exceeds 256 files")


def test_errors_are_bundle_errors(make_bundle):
    with pytest.raises(BundleError):
        load_bundle(make_bundle(files={"kernels/x.o": b""}))


@pytest.mark.parametrize("tokens,ok", [(8192, True), (8193, False), (500_000, False)])
def test_metadata_cannot_ask_for_more_tokens_than_the_slot_verifies(make_bundle, tokens, ok):
    manifest = (
        'bundle_id = "m"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
        'source = "kernels/k.py"\nentry = "run"\nmetadata = "metadata/m.json"\n'
    )
    path = make_bundle(manifest=manifest, files={"metadata/m.json": f'{{"min_num_tokens": {tokens}}}'})
    if ok:
        assert load_bundle(path).ops[0].metadata.min_num_tokens == tokens
    else:
        with pytest.raises(BundleError, match=f"min_num_tokens {tokens} is beyond the slot's largest token count 8192"):
            load_bundle(path)


def test_kernel_constexprs_are_32_bit(make_bundle):
    manifest = (
        'bundle_id = "c"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
        'source = "kernels/k.py"\nentry = "run"\nkind = "triton"\narchitectures = ["sm_90"]\n\n[ops.kernel]\n'
        'params = [{name = "x", type = "*T"}]\ngrid = ["1"]\nconstexprs = {BLOCK = 4294967296}\n'
    )
    with pytest.raises(BundleError, match="constexprs.BLOCK: Input should be less than 2147483648"):
        load_bundle(make_bundle(manifest=manifest))


def test_vcs_bytecode_and_package_output_are_ignored_and_returned_not_printed(make_bundle, capsys):
    plain = load_bundle(make_bundle(name="plain"))
    root = make_bundle(
        name="b",
        files={
            ".git/HEAD": "ref: refs/heads/main\n",
            ".git/objects/ab/cd": b"\0",
            ".hg/store": b"",
            "kernels/__pycache__/k.cpython-311.pyc": b"\0",
            "dist/b.tar.gz": b"\x1f\x8b",
            ".gitignore": "dist/\n",
        },
    )
    (root / "manifest.toml").write_text((root / "manifest.toml").read_text().replace('"b"', '"plain"'))
    bundle = load_bundle(root)
    assert bundle.identity == plain.identity
    assert bundle.ignored == (".git/", ".gitignore", ".hg/", "dist/", "kernels/__pycache__/") and not plain.ignored
    assert capsys.readouterr().err == "", "library code does not print; the CLI names what was left out"
    expect_error(make_bundle(name="c", files={"kernels/dist/x.tar.gz": b""}), "file type not allowed")

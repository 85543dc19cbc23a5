"""Every command that takes a bundle takes a directory or an archive; the ledger defaults to a per-user file."""

import io
import json
import subprocess
import sys
import tarfile

import pytest

from hotfloat.bundle import load_bundle, pack

from ..conftest import EXAMPLES


def hotfloat(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


@pytest.fixture
def archive(tmp_path):
    bundle = load_bundle(EXAMPLES / "silu_torch")
    path = tmp_path / "silu.tar.gz"
    path.write_bytes(pack(bundle))
    return path, bundle.identity


def test_hash_scan_and_package_take_an_archive(archive, tmp_path):
    path, identity = archive
    assert hotfloat("hash", path).stdout.strip() == identity
    scanned = hotfloat("scan", path, "--json")
    assert scanned.returncode == 0 and json.loads(scanned.stdout)["identity"] == identity
    packaged = hotfloat("chain", "package", path, "--out", tmp_path / "again.tar.gz", "--json")
    assert packaged.returncode == 0 and json.loads(packaged.stdout)["identity"] == identity
    assert (tmp_path / "again.tar.gz").read_bytes() == path.read_bytes()  # canonical archives repack byte-identical


def test_verify_takes_an_archive(archive):
    path, identity = archive
    p = hotfloat("verify", path, "--device", "cpu", "--dtype", "fp32", "--trials", "1", "--json")
    report = json.loads(p.stdout)
    assert p.returncode == 0 and report["identity"] == identity and report["status"] == "PASS", p.stderr


def test_not_a_bundle_is_one_error_line(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive")
    for target in (junk, tmp_path / "missing"):
        p = hotfloat("hash", target)
        assert p.returncode == 2 and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr


def test_ledger_defaults_to_the_per_user_data_directory(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}
    p = hotfloat("validator", "submit", EXAMPLES / "silu_torch", env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "data" / "hotfloat" / "ledger.db").is_file()
    assert not list(tmp_path.glob("*.db"))
    del env["XDG_DATA_HOME"]
    assert hotfloat("validator", "submit", EXAMPLES / "silu_torch", env=env, cwd=tmp_path).returncode == 0
    assert (tmp_path / "home" / ".local" / "share" / "hotfloat" / "ledger.db").is_file()
    env["HOTFLOAT_LEDGER"] = str(tmp_path / "mine.db")
    status = hotfloat("validator", "status", "--json", env=env, cwd=tmp_path)
    assert status.returncode == 2 and "no ledger here" in status.stderr  # the override is honoured, not the default
    assert hotfloat("validator", "submit", EXAMPLES / "silu_torch", env=env, cwd=tmp_path).returncode == 0
    assert json.loads(hotfloat("validator", "status", "--json", env=env).stdout)["counts"]["received"] == 1


def test_a_bundle_in_git_with_bytecode_verifies_and_stays_verifiable_after_package(tmp_path):
    bundle = tmp_path / "mine"
    for rel, data in load_bundle(EXAMPLES / "silu_torch").files.items():
        (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
        (bundle / rel).write_bytes(data)
    subprocess.run(["git", "init", "-q", str(bundle)], check=True)
    (bundle / ".gitignore").write_text("__pycache__/\n")
    (bundle / "kernels" / "__pycache__").mkdir()
    (bundle / "kernels" / "__pycache__" / "k.cpython-311.pyc").write_bytes(b"\0bytecode")
    identity = hotfloat("hash", bundle).stdout.strip()
    assert identity == load_bundle(EXAMPLES / "silu_torch").identity  # nothing of git or bytecode is hashed
    packaged = hotfloat("chain", "package", ".", "--json", cwd=bundle)  # as the generated README says
    assert packaged.returncode == 0 and json.loads(packaged.stdout)["identity"] == identity, packaged.stderr
    assert packaged.stderr.count("note: ignored ") == 1 and ".git/" in packaged.stderr, packaged.stderr
    assert (bundle / "dist" / "silu-torch-example.tar.gz").is_file() and (bundle / "dist" / ".gitignore").is_file()
    p = hotfloat("verify", ".", "--device", "cpu", "--dtype", "fp32", "--trials", "1", "--json", cwd=bundle)
    assert p.returncode == 0 and json.loads(p.stdout)["identity"] == identity, p.stderr
    assert hotfloat("chain", "package", ".", "--json", cwd=bundle).returncode == 0  # twice: still the same bundle
    inside = hotfloat("chain", "package", ".", "--out", "mine.tar.gz", cwd=bundle)
    assert inside.returncode == 2 and "inside the bundle" in inside.stderr and not (bundle / "mine.tar.gz").exists()
    subprocess.run(["tar", "czf", tmp_path / "all.tar.gz", "-C", tmp_path, "mine"], check=True)
    hashed = hotfloat("hash", tmp_path / "all.tar.gz")  # an archive of the folder leaves out what the folder does,
    assert hashed.stdout.strip() == identity  # and says so the same way
    assert f"note: ignored .git/ .gitignore dist/ kernels/__pycache__/ in {tmp_path / 'all.tar.gz'}" in hashed.stderr


def test_a_tarball_with_one_top_level_folder_is_accepted(tmp_path):
    bundle = load_bundle(EXAMPLES / "silu_torch")
    path = tmp_path / "silu.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for rel, data in bundle.files.items():
            info = tarfile.TarInfo(f"silu_torch/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert hotfloat("hash", path).stdout.strip() == bundle.identity
    p = hotfloat("verify", path, "--device", "cpu", "--dtype", "fp32", "--trials", "1", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["identity"] == bundle.identity, p.stderr
    dry = hotfloat("chain", "submit", path, "--url", "https://example.org/silu.tar.gz", "--netuid", "1", "--dry-run")
    assert dry.returncode == 0 and json.loads(dry.stdout)["h"] == bundle.identity, dry.stderr
    submitted = hotfloat("validator", "submit", path, "--ledger", tmp_path / "l.db", "--json")
    assert submitted.returncode == 0 and json.loads(submitted.stdout)[0]["identity"] == bundle.identity


def test_a_manifest_given_for_its_bundle_says_to_give_the_directory():
    p = hotfloat("verify", EXAMPLES / "silu_torch" / "manifest.toml")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "give the bundle directory" in p.stderr, p.stderr

"""Stand-ins for the image tests: a tiny Debian-like base tar and locally built wheels, so builds run offline; and no
Bazel server left behind by them."""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="package", autouse=True)
def _no_bazel_server_left():
    """The image tests start Bazel (test_bazel, and `make images` for the containers); its server is shut down when
    they end rather than idling at ~250 MB. Shutdown waits for any running command, so a build started elsewhere
    finishes first."""
    yield
    if shutil.which("bazel"):
        subprocess.run(["bazel", "shutdown"], cwd=REPO, capture_output=True, timeout=300, check=False)


STATUS = """Package: base-files
Status: install ok installed
Architecture: amd64
Version: 12.4+deb12u1

Package: python3
Status: install ok installed
Architecture: amd64
Version: 3.11.2-1+b1

Package: removed-thing
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0
"""


def make_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """Writes a minimal pure-Python wheel; returns its path."""
    dist = name.replace("-", "_")
    files = {
        f"{dist}/__init__.py": f"VERSION = {version!r}\n".encode(),
        f"{dist}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Requires-Dist: {r}\n" for r in requires)
        ).encode(),
        f"{dist}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hotfloat-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
            for p, d in files.items()
        )
        + f"{dist}-{version}.dist-info/RECORD,,\n"
    )
    files[f"{dist}-{version}.dist-info/RECORD"] = record.encode()
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for p, d in files.items():
            z.writestr(zipfile.ZipInfo(p, date_time=(2020, 1, 1, 0, 0, 0)), d)
    return path


def lock_line(wheel: Path, name: str, version: str) -> str:
    return f"{name}=={version} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n"


@pytest.fixture
def fake_base(tmp_path) -> tuple[Path, Path, Path]:
    """(base.toml, debian.lock, base.tar): a rootfs tar with a dpkg status file and an /etc/passwd."""
    root = tmp_path / "base"
    root.mkdir()
    toml = root / "base.toml"
    toml.write_text(
        'suite = "bookworm"\nmirror = "http://deb.debian.org/debian"\npackages = ["python3"]\n'
        "source_date_epoch = 1767225600\n"
    )
    lock = root / "debian.lock"
    lock.write_text("# test\nbase-files=12.4+deb12u1\npython3=3.11.2-1+b1\n")
    tar_path = root / "base.tar"
    with tarfile.open(tar_path, "w") as tar:
        for name, data in (("etc/passwd", b"root:x:0:0::/root:/bin/sh\n"), ("var/lib/dpkg/status", STATUS.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return toml, lock, tar_path


@pytest.fixture
def wheels(tmp_path) -> Path:
    """A wheel folder with alpha 1.0 (needs beta>=2) and beta 2.1, for offline pip installs."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder, "alpha", "1.0", ("beta>=2",))
    make_wheel(folder, "beta", "2.1")
    return folder

"""A new slot is two files: its slot file in hotfloat/slots and its seam file in hotfloat_sglang/seams. Copies of
both libraries get exactly those two files (tests/seams/new_slot/, activation.gelu_and_mul on SGLang's GeluAndMul)
and, with nothing else edited, the slot is listed, verified (an exact kernel passes, a wrong one fails), checked by
compat against the pinned SGLang, hooked and routed in its real layer, and audited: the validator's judge passes the
exact kernel's calls and fails the wrong one's."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.compat import engine_python

HERE = Path(__file__).parent
LIBS = HERE.parents[1] / "libs"
FIXTURE = HERE / "new_slot"
EXACT = "import torch\n\n\ndef gelu_and_mul(x, out):\n    d = x.shape[-1] // 2\n    out.copy_(torch.nn.functional.gelu(x[:, :d], approximate='tanh') * x[:, d:])\n"
WRONG = EXACT.replace("approximate='tanh'", "approximate='none'")  # erf instead of tanh: off by up to ~1e-3


def _tree(root: Path, base: Path | None = None) -> dict[str, str]:
    return {
        str(p.relative_to(base or root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _bundle(root: Path, kernel: str) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "manifest.toml").write_text(
        f'bundle_id = "{root.name}"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\n'
        'slot = "activation.gelu_and_mul"\nsource = "kernels/gelu.py"\nentry = "gelu_and_mul"\n'
    )
    (root / "kernels/gelu.py").write_text(kernel)
    return root


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """Both libraries copied, plus the two files; returns (its path, the files that differ from the originals)."""
    root = tmp_path_factory.mktemp("lib")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(LIBS / "hotfloat" / "hotfloat", root / "hotfloat", ignore=ignore)
    shutil.copytree(LIBS / "hotfloat_sglang" / "hotfloat_sglang", root / "hotfloat_sglang", ignore=ignore)
    shutil.copy(FIXTURE / "slot_gelu.py", root / "hotfloat" / "slots" / "gelu.py")
    shutil.copy(FIXTURE / "seam_gelu.py", root / "hotfloat_sglang" / "seams" / "gelu.py")
    before = {
        **_tree(LIBS / "hotfloat" / "hotfloat", LIBS / "hotfloat"),
        **_tree(LIBS / "hotfloat_sglang" / "hotfloat_sglang", LIBS / "hotfloat_sglang"),
    }
    after = _tree(root)
    changed = sorted(p for p, h in after.items() if before.get(p) != h) + sorted(set(before) - set(after))
    return root, changed


def _env(root: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(root), "PYTHONWARNINGS": "ignore", "TRITON_INTERPRET": "1"}


def test_the_new_slot_touches_two_files(lib):
    assert lib[1] == ["hotfloat/slots/gelu.py", "hotfloat_sglang/seams/gelu.py"]


def test_the_registry_lists_it_and_verify_judges_it(lib, tmp_path):
    root, _ = lib
    run = [sys.executable, "-m", "hotfloat.cli"]
    p = subprocess.run([*run, "slots", "--json"], env=_env(root), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "activation.gelu_and_mul" in {s["name"] for s in json.loads(p.stdout)}, p.stderr
    for kernel, code in ((EXACT, 0), (WRONG, 1)):
        b = _bundle(tmp_path / ("exact" if code == 0 else "wrong"), kernel)
        p = subprocess.run(
            [*run, "verify", str(b), "--json"], env=_env(root), capture_output=True, text=True, timeout=600
        )
        assert p.returncode == code, (p.stdout[-1500:], p.stderr[-1500:])
        assert json.loads(p.stdout)["status"] == ("PASS" if code == 0 else "FAIL")


@pytest.fixture(scope="module")
def engine(lib, tmp_path_factory):
    """In the engine venv: compat's seam rows, and the real GeluAndMul layer with each bundle armed and audited."""
    root, _ = lib
    python = engine_python()
    assert Path(python).exists(), f"{python} missing: `make engine` builds the engine venv (make test does)"
    base = tmp_path_factory.mktemp("bundles")
    out = {}
    for name, kernel in (("exact", EXACT), ("wrong", WRONG)):
        b = _bundle(base / name, kernel)
        p = subprocess.run(
            [python, str(FIXTURE / "engine_probe.py"), str(b)],
            env=_env(root),
            capture_output=True,
            text=True,
            timeout=540,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        out[name] = json.loads(p.stdout.strip().splitlines()[-1])
    probe = (
        "import os, json; from hotfloat.compat.runner import check; "
        "print(json.dumps([[r.name, r.status.value] for r in check('sglang', os.environ['ENGINE']).rows]))"
    )
    env = {**_env(root), "ENGINE": python}
    p = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out["compat"] = dict(json.loads(p.stdout.strip().splitlines()[-1]))
    return root, out


def test_compat_checks_the_new_seam_against_the_pinned_sglang(engine):
    _, out = engine
    rows = out["compat"]
    assert rows["seam registry"] == "PASS"
    assert {rows[n] for n in ("GeluAndMul.forward_cuda", "GeluAndMul.forward_native", "GeluAndMul.__init__")} == {
        "PASS"
    }


def test_the_copied_library_ran_and_the_plugin_hooked_the_new_seam(engine):
    root, out = engine
    for name in ("exact", "wrong"):
        assert all(f.startswith(str(root)) for f in out[name]["files"]), out[name]["files"]
        assert {f"sglang.srt.layers.activation.GeluAndMul.{m}" for m in ("forward_cuda", "forward_native")} <= set(
            out[name]["hooked"]
        )
        assert out[name]["counts"]["activation.gelu_and_mul"] == [5, 0]  # every call routed to the bundle


def test_the_audit_judges_the_new_slot(engine):
    _, out = engine
    exact, wrong = out["exact"], out["wrong"]
    assert exact["max_diff_from_stock"] == 0.0 and wrong["max_diff_from_stock"] > 0.0
    assert exact["audit_error"] is None and exact["audit"][0] > 0 and exact["audit"][1] == 0
    assert wrong["audit"][0] > 0 and wrong["audit"][1] == wrong["audit"][0]

"""`make k8s`: pins every image in deploy/k8s/ to images/digests.lock and writes the pod seccomp profile the
candidate sandbox needs; `--check` lists the files that differ and exits 1 (a lock check, as tests do).

`render(DIR)` applies the subset of kustomize the manifests use (resources, namespace, JSON 6902 patches aimed at
one object by kind and name), so tests and hosts without kustomize see what `kubectl apply -k DIR` would apply;
anything outside that subset is refused rather than half-applied.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
LOCK = ROOT / "images" / "digests.lock"
PROFILE = K8S / "seccomp" / "hotfloat-sandbox.json"
OVERLAYS = ("base", "overlays/one-gpu", "overlays/eight-gpu")
"""Every directory `kubectl apply -k` may be pointed at."""

IMAGE = re.compile(
    r"(?P<repo>[a-z0-9.-]+(?::\d+)?(?:/[a-z0-9._-]+)*/hotfloat/(?P<name>[a-z]+)-(?P<flavour>cpu|cuda))"
    r"(?:@sha256:[0-9a-f]{64})?"
)
"""An image reference the generator owns: REGISTRY/hotfloat/NAME-FLAVOUR, pinned or not; NAME:FLAVOUR is its key in
digests.lock."""
DIGEST_ENV = re.compile(r'(HOTFLOAT_IMAGE_DIGEST, value: )"[^"]*"')
"""The environment identity's image digest (`hotfloat env`), set to the image named last above it."""

BWRAP_NEEDS = {
    "mount": "bind mounts, the fresh /proc, /dev and tmpfs of the sandbox's root",
    "umount2": "detaching the old root after pivot_root",
    "pivot_root": "making the new root the root",
    "unshare": "the nested user namespace of --disable-userns",
}
"""Calls the candidate filter denies (hotfloat.sandbox.seccomp.DENIED) that bubblewrap itself makes while it builds
the sandbox, before it installs that filter for the candidate: the pod profile must allow these and no others
(bubblewrap 0.8.0, the image's: denying any one of them stops it, and chroot, setns and clone3 it does without;
tests/deploy)."""
KEYS = ("apiVersion", "kind", "namespace", "resources", "patches")


def pin(text: str, lock: dict[str, str]) -> str:
    """`text` with every owned image reference pinned to its locked digest, and each HOTFLOAT_IMAGE_DIGEST set to
    the digest of the image above it."""
    out, current = [], None
    for line in text.splitlines(keepends=True):
        m = IMAGE.search(line)
        if m:
            key = f"{m['name']}:{m['flavour']}"
            if key not in lock:
                raise SystemExit(f"{m[0]}: no {key} in {LOCK.relative_to(ROOT)}")
            current = lock[key]
            line = f"{line[: m.start()]}{m['repo']}@{current}{line[m.end() :]}"
        if DIGEST_ENV.search(line):
            if current is None:
                raise SystemExit(f"HOTFLOAT_IMAGE_DIGEST before any image: {line.strip()}")
            line = DIGEST_ENV.sub(lambda e: f'{e[1]}"{current}"', line)
        out.append(line)
    return "".join(out)


def seccomp_profile() -> dict:
    """The pod's filter: what the candidate's own filter denies, less what bubblewrap needs to build the sandbox."""
    from hotfloat.sandbox.seccomp import DENIED

    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": sorted(set(DENIED) - set(BWRAP_NEEDS)), "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
    }


def expected() -> dict[Path, str]:
    """Every file `make k8s` owns, with the content it writes."""
    from hotfloat.image.digests import read

    lock = read(LOCK)
    files = {p: pin(p.read_text(), lock) for p in sorted(K8S.rglob("*.yaml"))}
    files[PROFILE] = json.dumps(seccomp_profile(), indent=2) + "\n"
    return files


def stale() -> list[Path]:
    """Files whose committed content differs from what `make k8s` writes."""
    return [p for p, text in expected().items() if not p.is_file() or p.read_text() != text]


def render(directory: Path) -> list[dict]:
    """The objects `kubectl apply -k directory` would apply, for the kustomize subset these manifests use."""
    k = yaml.safe_load((directory / "kustomization.yaml").read_text())
    if set(k) - set(KEYS):
        raise ValueError(f"{directory}: kustomization keys {sorted(set(k) - set(KEYS))} are not rendered here")
    docs: list[dict] = []
    for name in k.get("resources", []):
        path = directory / name
        docs += render(path) if path.is_dir() else [d for d in yaml.safe_load_all(path.read_text()) if d]
    for patch in k.get("patches", []):
        target = patch["target"]
        hits = [d for d in docs if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]]
        if set(target) != {"kind", "name"} or len(hits) != 1:
            raise ValueError(f"{directory}: patch target {target} must name exactly one object by kind and name")
        for op in yaml.safe_load(patch["patch"]):
            _apply(hits[0], op)
    for d in docs:
        if k.get("namespace") and d["kind"] != "Namespace":
            d["metadata"]["namespace"] = k["namespace"]
    return docs


def _apply(doc: dict, op: dict) -> None:
    """One JSON 6902 operation (add, replace, remove) on `doc`, in place."""
    *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")]
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = int(last) if isinstance(node, list) else last
    exists = key < len(node) if isinstance(node, list) else key in node
    if op["op"] in ("remove", "replace") and not exists:
        raise ValueError(f"JSON patch {op['op']} of {op['path']}: nothing there")
    if op["op"] == "remove":
        del node[key]
    elif op["op"] == "add" and isinstance(node, list):
        node.insert(key, copy.deepcopy(op["value"]))
    elif op["op"] in ("add", "replace"):
        node[key] = copy.deepcopy(op["value"])
    else:
        raise ValueError(f"JSON patch op {op['op']!r} is not rendered here")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list the files that differ and exit 1; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        for p in bad:
            print(f"stale: {p.relative_to(ROOT)} (run `make k8s`)", file=sys.stderr)
        return 1 if bad else 0
    for path, text in expected().items():
        if not path.is_file() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""deploy/k8s/: what `make k8s` writes is what is committed, every object of every overlay passes the Kubernetes
schemas offline, images are pinned to images/digests.lock, and worker pods hold exactly the sandbox's privileges."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import kubernetes_validate
import pytest

from hotfloat.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("k8s_manifests", ROOT / "tools" / "k8s_manifests.py")
k8s = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k8s)

KUBERNETES = "1.37"
"""The newest schema set kubernetes-validate 1.37.0 carries; hostUsers, procMount and appArmorProfile are in it."""
WORKERS = ("compiler", "admission", "qualification")
GPU = "nvidia.com/gpu"
SECRETS = {
    "hotfloat-token",
    "hotfloat-tls-compiler",
    "hotfloat-tls-admission",
    "hotfloat-tls-qualification",
    "hotfloat-tls-validator",
}
"""Secrets the manifests mount and deploy/k8s/README.md says how to create; none is committed."""


def rendered():
    return {name: k8s.render(k8s.K8S / name) for name in k8s.OVERLAYS}


def workloads(docs):
    return {d["metadata"]["name"]: d for d in docs if d["kind"] in ("Deployment", "StatefulSet")}


def container(workload):
    (c,) = workload["spec"]["template"]["spec"]["containers"]
    return c


def every_container(workload):
    pod = workload["spec"]["template"]["spec"]
    return [*pod.get("initContainers", []), *pod["containers"]]


def argv(c):
    return [*c["command"], *c["args"]]


def flag(c, name):
    args = argv(c)
    return args[args.index(name) + 1] if name in args else None


def test_committed_manifests_are_what_make_k8s_writes():
    stale = [str(p.relative_to(ROOT)) for p in k8s.stale()]
    assert not stale, f"stale against images/digests.lock or the sandbox's filter: {stale} (run `make k8s`)"


def test_pinning_follows_the_lock():
    text = 'image: registry.invalid/hotfloat/worker-cuda\nenv:\n  - {name: HOTFLOAT_IMAGE_DIGEST, value: "x"}\n'
    lock = {"worker:cuda": "sha256:" + "ab" * 32}
    pinned = k8s.pin(text, lock)
    assert f"worker-cuda@{lock['worker:cuda']}\n" in pinned and f'value: "{lock["worker:cuda"]}"' in pinned
    assert k8s.pin(pinned, {"worker:cuda": "sha256:" + "cd" * 32}).count("cd" * 32) == 2
    with pytest.raises(SystemExit, match="no worker:cuda"):
        k8s.pin(text, {})


def test_a_new_digest_in_the_lock_makes_exactly_its_users_stale(tmp_path, monkeypatch):
    lock = tmp_path / "digests.lock"
    lock.write_text(
        re.sub(r"^(worker:cuda) sha256:[0-9a-f]{64}$", r"\1 sha256:" + "0" * 64, k8s.LOCK.read_text(), flags=re.M)
    )
    monkeypatch.setattr(k8s, "LOCK", lock)
    assert sorted(p.name for p in k8s.stale()) == ["admission.yaml", "qualification.yaml"]


@pytest.mark.parametrize("overlay", k8s.OVERLAYS)
def test_every_object_passes_the_kubernetes_schemas_offline(overlay):
    docs = k8s.render(k8s.K8S / overlay)
    assert docs
    for d in docs:
        try:
            kubernetes_validate.validate(d, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{overlay}: {d['kind']}/{d['metadata']['name']}: {e.message} at {list(e.path)}")


def test_every_image_is_pinned_by_a_locked_digest():
    from hotfloat.image.digests import read

    lock = read(k8s.LOCK)
    used = set()
    for overlay, docs in rendered().items():
        for name, w in workloads(docs).items():
            for c in every_container(w):
                m = re.fullmatch(r"[^@\s]+/hotfloat/(\w+)-(\w+)@(sha256:[0-9a-f]{64})", c["image"])
                assert m, f"{overlay}: {name} image {c['image']} is not pinned by digest"
                assert lock.get(f"{m[1]}:{m[2]}") == m[3], f"{overlay}: {name} digest is not {m[1]}:{m[2]} in the lock"
                assert c["image"] == container(w)["image"], f"{overlay}: {name}'s {c['name']} runs another image"
                used.add(f"{m[1]}:{m[2]}")
            env = {e["name"]: e.get("value") for e in container(w)["env"]}
            assert env["HOTFLOAT_IMAGE_DIGEST"] == m[3], f"{overlay}: {name} reports another image digest"
    assert used == set(lock), f"locked images no overlay runs: {set(lock) - used}"


def selects(policy, labels):
    sel = policy["spec"]["podSelector"]
    ok = all(labels.get(k) == v for k, v in sel.get("matchLabels", {}).items())
    for e in sel.get("matchExpressions", []):
        assert e["operator"] == "In", "only In selectors are evaluated here"
        ok = ok and labels.get(e["key"]) in e["values"]
    return ok


def test_worker_pods_hold_no_token_one_gpu_each_and_no_egress():
    for overlay, docs in rendered().items():
        policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
        for name in WORKERS:
            w = workloads(docs)[name]
            pod, c = w["spec"]["template"]["spec"], container(w)
            assert pod["automountServiceAccountToken"] is False, f"{overlay}: {name} mounts a token"
            gpus = c["resources"]["limits"].get(GPU)
            if name == "compiler":
                assert gpus is None
            elif name == "qualification" or flag(c, "--device") == "cuda":
                assert gpus == 1 and flag(c, "--device") == "cuda" and "worker-cuda@" in c["image"], (
                    f"{overlay}: {name}"
                )
            else:  # admission on CPU (one-gpu): the cpu image, no GPU
                assert gpus is None and "worker-cpu@" in c["image"], f"{overlay}: {name}"
            labels = w["spec"]["template"]["metadata"]["labels"]
            mine = [p for p in policies if selects(p, labels)]
            assert mine, f"{overlay}: no NetworkPolicy selects {name}"
            for p in mine:
                assert "Egress" in p["spec"]["policyTypes"] and not p["spec"].get("egress"), f"{p['metadata']['name']}"
                assert "Ingress" in p["spec"]["policyTypes"]
                for rule in p["spec"].get("ingress", []):
                    assert [f["podSelector"]["matchLabels"] for f in rule["from"]] == [
                        {"app.kubernetes.io/name": "validator"}
                    ]


def test_worker_pods_carry_the_sandbox_settings_and_nothing_more():
    for overlay, docs in rendered().items():
        for name, w in workloads(docs).items():
            pod, psc = w["spec"]["template"]["spec"], w["spec"]["template"]["spec"]["securityContext"]
            assert psc["runAsNonRoot"] is True and psc["runAsUser"] == 10001
            assert not pod.get("hostPID") and not pod.get("hostNetwork") and not pod.get("hostIPC")
            if name in WORKERS:
                assert pod["hostUsers"] is False
                assert psc["seccompProfile"] == {"type": "Localhost", "localhostProfile": k8s.PROFILE.name}
                assert [c["name"] for c in pod["initContainers"]] == ["sandbox-check"], f"{overlay}: {name}"
            else:
                assert psc["seccompProfile"] == {"type": "RuntimeDefault"} and "initContainers" not in pod
            for c in every_container(w):
                sc = c["securityContext"]
                assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
                assert sc["capabilities"] == {"drop": ["ALL"]}, f"{overlay}: {name} adds capabilities"
                assert "privileged" not in sc and "seccompProfile" not in sc and "runAsUser" not in sc
                sandbox = {"procMount": "Unmasked", "appArmorProfile": {"type": "Unconfined"}}
                assert {k: sc[k] for k in sandbox if k in sc} == (sandbox if name in WORKERS else {}), (
                    f"{overlay}: {name}"
                )


def test_workers_are_headless_and_the_ledger_has_one_writer_on_its_own_volume():
    for overlay, docs in rendered().items():
        services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
        for name in ("admission", "qualification"):
            assert services[name]["spec"].get("clusterIP") == "None", f"{overlay}: {name} hides its pods behind one IP"
        v = workloads(docs)["validator"]
        assert v["kind"] == "StatefulSet" and v["spec"]["replicas"] == 1, f"{overlay}: one ledger writer"
        (claim,) = v["spec"]["volumeClaimTemplates"]
        mounts = {m["name"]: m["mountPath"] for m in container(v)["volumeMounts"]}
        assert flag(container(v), "--ledger").startswith(mounts[claim["metadata"]["name"]] + "/")


def test_secrets_are_referenced_never_committed():
    texts = [p.read_text() for p in k8s.K8S.rglob("*.yaml")]
    assert not any(re.search(r"^kind: Secret\b", t, re.M) for t in texts)
    named = {
        v["secret"]["secretName"]
        for docs in rendered().values()
        for w in workloads(docs).values()
        for v in w["spec"]["template"]["spec"]["volumes"]
        if "secret" in v
    }
    assert named == SECRETS
    readme = (k8s.K8S / "README.md").read_text()
    assert all(s in readme for s in SECRETS), "deploy/k8s/README.md must say how to create each secret"


def cli_command(words):
    """The click command `hotfloat WORDS...` resolves to, and the arguments left for it."""
    from hotfloat.cli.main import cli

    cmd, ctx, args = cli, click.Context(cli), list(words)
    while isinstance(cmd, click.Group):
        _, cmd, args = cmd.resolve_command(ctx, args)
        ctx = click.Context(cmd, parent=ctx)
    return cmd, args


def test_commands_use_only_options_the_cli_declares():
    for overlay, docs in rendered().items():
        for name, w in workloads(docs).items():
            c = container(w)
            assert c["command"][0] == "hotfloat"
            cmd, args = cli_command(c["command"][1:] + c["args"])
            declared = {o for p in cmd.params for o in getattr(p, "opts", [])}
            used = {a for a in args if a.startswith("--")}
            assert used <= declared, f"{overlay}: {name} uses {used - declared}, which `{' '.join(c['command'])}` lacks"


ADDRESSES = ("listen", "compiler", "admission", "qualification")
"""Options naming an address a pod listens on or dials."""


def test_every_address_a_pod_listens_on_or_dials_is_accepted_with_the_tls_it_is_given():
    """The transport accepts a pod address or a DNS name only with mutual TLS; each manifest gives it."""
    from hotfloat_services.common.transport import Tls, address

    tls = Tls(b"ca", b"cert", b"key")
    for overlay, docs in rendered().items():
        for name, w in workloads(docs).items():
            c = container(w)
            _, args = cli_command(c["command"][1:] + c["args"])
            given = {}
            for flag, value in zip(args, args[1:], strict=False):
                if flag.startswith("--"):
                    given.setdefault(flag.removeprefix("--"), []).append(value.replace("$(POD_IP)", "10.1.2.3"))
            assert {"tls-ca", "tls-cert", "tls-key"} <= set(given), f"{overlay}: {name} has no mutual TLS"
            flat = [a for k in ADDRESSES for a in given.get(k, [])]
            assert flat, f"{overlay}: {name} names no address"
            for a in flat:
                assert address(a, tls) == a
                with pytest.raises(InputError):
                    address(a)  # without TLS the same address is refused


def test_the_validator_names_every_qualification_pod_as_its_own_endpoint():
    """One run in flight per endpoint is one per GPU only when each pod is its own endpoint: the validator lists the
    StatefulSet's stable pod names, as many as it has replicas."""
    for overlay, docs in rendered().items():
        w = workloads(docs)
        args = container(w["validator"])["args"]
        named = [v for flag, v in zip(args, args[1:], strict=False) if flag == "--qualification"]
        pods = w["qualification"]["spec"]["replicas"]
        assert named == [f"qualification-{i}.qualification.hotfloat.svc:50051" for i in range(pods)], overlay


PROBE = """
import errno, os, sys
import pyseccomp as sc
from hotfloat.sandbox import process
deny = sys.argv[1:]
os.setgroups([]); os.setgid(10001); os.setuid(10001)
f = sc.SyscallFilter(sc.ALLOW)
for name in deny:
    f.add_rule(sc.ERRNO(errno.EPERM), name)
f.load()
print(process._probe(False) or "OK")
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="becomes the image's uid 10001, which needs root")
def test_the_sandbox_builds_as_the_pods_user_under_the_pod_profile_and_fails_closed_without_it():
    """As in a worker pod: uid 10001, no new privileges, the pod's seccomp profile. Each call the profile leaves
    to bubblewrap is needed: denying it makes the sandbox refuse, naming bubblewrap's error."""
    deny = k8s.seccomp_profile()["syscalls"][0]["names"]

    def probe(*extra):
        done = subprocess.run([sys.executable, "-c", PROBE, *deny, *extra], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    if probe() != "OK":
        pytest.skip(f"no unprivileged user namespaces on this host: {probe()}")
    for call in k8s.BWRAP_NEEDS:
        assert probe(call).startswith("bubblewrap cannot create namespaces here"), call


def test_the_qualification_pod_maps_its_pids_to_the_nodes_and_no_other_pod_sees_the_node():
    """NVML and the checkpoint lock speak the node's pids: the qualification runner reads the node's /proc, read-only,
    to map them (hotfloat.qualify.isolation.pids); no other workload mounts anything of the node."""
    for overlay, docs in rendered().items():
        for name, w in workloads(docs).items():
            pod = w["spec"]["template"]["spec"]
            host = [v for v in pod["volumes"] if "hostPath" in v]
            if name != "qualification":
                assert not host, f"{overlay}: {name} mounts the node"
                continue
            assert host == [{"name": "node-proc", "hostPath": {"path": "/proc", "type": "Directory"}}], overlay
            c = container(w)
            mount = next(m for m in c["volumeMounts"] if m["name"] == "node-proc")
            assert mount == {"name": "node-proc", "mountPath": "/host/proc", "readOnly": True}
            env = {e["name"]: e.get("value") for e in c["env"]}
            assert env["HOTFLOAT_HOST_PROC"] == "/host/proc"

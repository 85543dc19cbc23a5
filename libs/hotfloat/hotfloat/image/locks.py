"""The locks an image is built from, and the check that what got installed is exactly what they say."""

from __future__ import annotations

import re
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from ..errors import InputError

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def canonical(name: str) -> str:
    """PEP 503 name, so 'Nvidia_Cutlass.DSL' and 'nvidia-cutlass-dsl' compare equal."""
    return re.sub(r"[-_.]+", "-", name).lower()


def python_pins(lock: Path) -> dict[str, str]:
    """name -> version of every requirement in a hashed pip lock; unpinned or unhashed lines are refused."""
    try:
        text = lock.read_text()
    except OSError as e:
        raise InputError(f"cannot read lock {lock}: {e}") from e
    pins: dict[str, str] = {}
    for line in text.splitlines():
        match = _PIN.match(line)
        if match:
            pins[canonical(match.group(1))] = match.group(2)
        elif line and not line[0].isspace() and not line.startswith("#"):
            raise InputError(f"{lock}: not an exact pin: {line!r}")
    if "--hash=sha256:" not in text or not pins:
        raise InputError(f"{lock}: a lock must pin exact versions with hashes")
    return pins


def lock_without(text: str, names: set[str]) -> str:
    """The lock text minus the entries (pin line plus its indented hash and comment lines) of `names`."""
    kept, keep = [], True
    for line in text.splitlines(keepends=True):
        if line and not line[0].isspace() and not line.startswith("#"):
            match = _PIN.match(line)
            keep = not (match and canonical(match.group(1)) in names)
        if keep:
            kept.append(line)
    return "".join(kept)


def installed_python(*sites: Path) -> dict[str, str]:
    """name -> version of every distribution pip put under the `sites`, read from the dist-info metadata."""
    found = {}
    for meta in sorted(m for site in sites for m in site.glob("*.dist-info/METADATA")):
        headers = HeaderParser().parsestr(meta.read_text(errors="replace"), headersonly=True)
        found[canonical(headers["Name"])] = headers["Version"]
    return found


def unmet_requirements(*sites: Path, no_deps: tuple[str, ...] = ()) -> list[str]:
    """Every unconditional Requires-Dist of an installed distribution that the installed set does not satisfy,
    except those of the `no_deps` distributions (locked on purpose without their dependencies).

    This is what makes a Torch/CUDA pair provably matching: torch's wheel names the exact CUDA wheels it was built
    against, and the lock must have installed exactly those.
    """
    skip = {canonical(n) for n in no_deps}
    installed = {}
    for name, version in installed_python(*sites).items():
        try:
            installed[name] = Version(version)
        except InvalidVersion:
            continue
    env = {
        "python_version": "3.11",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "implementation_name": "cpython",
        "os_name": "posix",
        "extra": "",
    }
    unmet = []
    for meta in sorted(m for site in sites for m in site.glob("*.dist-info/METADATA")):
        headers = HeaderParser().parsestr(meta.read_text(errors="replace"), headersonly=True)
        if canonical(headers["Name"] or "") in skip:
            continue
        for line in headers.get_all("Requires-Dist") or []:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                unmet.append(f"{headers['Name']}: unparsable requirement {line!r}")
                continue
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            have = installed.get(canonical(req.name))
            if have is None or not req.specifier.contains(have, prereleases=True):
                unmet.append(f"{headers['Name']} needs {req}, installed {have or 'nothing'}")
    return unmet


def debian_pins(lock: Path) -> dict[str, str]:
    """package -> version from a Debian lock (`package=version` per line, # comments)."""
    try:
        lines = lock.read_text().splitlines()
    except OSError as e:
        raise InputError(f"cannot read lock {lock}: {e}") from e
    pins = {}
    for line in lines:
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.strip().partition("=")
            if not sep:
                raise InputError(f"{lock}: expected package=version, got {line!r}")
            pins[name] = version
    return pins


def dpkg_status(text: str) -> dict[str, str]:
    """package -> version of every installed package in a /var/lib/dpkg/status file."""
    installed = {}
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            arch = fields.get("Architecture", "all")
            name = fields["Package"] if arch in ("all", "amd64") else f"{fields['Package']}:{arch}"
            installed[name] = fields.get("Version", "")
    return dict(sorted(installed.items()))


def differences(kind: str, locked: dict[str, str], resolved: dict[str, str]) -> list[str]:
    """Every package whose resolved version differs from the lock, or that only one side has."""
    out = []
    for name in sorted(set(locked) | set(resolved)):
        want, got = locked.get(name), resolved.get(name)
        if want != got:
            out.append(f"{kind} {name}: lock {want or 'absent'}, resolved {got or 'absent'}")
    return out


def write_debian_lock(path: Path, packages: dict[str, str], header: str) -> None:
    path.write_text(f"# {header}\n" + "".join(f"{n}={v}\n" for n, v in sorted(packages.items())))

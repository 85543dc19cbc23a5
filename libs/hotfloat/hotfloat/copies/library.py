"""The reference library: code the project ships, which any author may use and nobody may pass off as their own.

Works (the example bundles and `hotfloat new`'s templates) are judged like earlier submissions, named
`reference:<file>`. Scaffolding (the adapters `hotfloat bundle import` writes beside a Cacheon kernel) is meant to be
carried unchanged, so it is never a copy target, only taken out before any comparison. The examples live outside the
installed package, so their fingerprints are kept in `examples.json` beside this module (`tools/copy_table.py
--write-library` writes it; a test keeps it equal to examples/); templates and adapters are computed from the
package itself.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from string import Template

from pydantic import ValidationError

from ..bundle import load_bundle
from ..errors import InfrastructureError
from .containment import Earlier
from .fingerprint import VERSION, Fingerprints, fingerprint, fingerprint_files

EXAMPLES = Path(__file__).with_name("examples.json")


GENERIC_WORKS = 3
"""Code found in at least this many works (a masked Triton load, a launch grid, the fp32 rmsnorm) is how kernels are
written, not whose they are: taken out before comparing with a work. Against an earlier submission every work is
taken out, since anyone may build on anything the project ships."""


class Library:
    """Works by name (templates marked as starting points), and what is taken out before each comparison."""

    def __init__(self, works: dict[str, Fingerprints], templates: frozenset[str], scaffolding: frozenset[int]):
        self.works, self.templates = works, templates
        counts = Counter(f for fp in works.values() for f in _all(fp))
        self.generic = frozenset(scaffolding | {f for f, n in counts.items() if n >= GENERIC_WORKS})
        """Taken out when comparing with a work: the scaffolding and code most works share."""
        self.everything = frozenset(scaffolding.union(counts))
        """Taken out when comparing with an earlier submission: everything the project ships."""

    def references(self) -> list[Earlier]:
        return [Earlier(name, fp, name in self.templates) for name, fp in sorted(self.works.items())]


def _all(fp: Fingerprints) -> set[int]:
    """Every fingerprint of a bundle, op and file alike."""
    return set().union(*fp.ops.values(), *fp.files.values())


def example_works(folder: Path) -> dict[str, Fingerprints]:
    """The fingerprints of every example bundle in `folder`, keyed `examples/<bundle>`."""
    return {
        f"examples/{d.name}": fingerprint(load_bundle(d))
        for d in sorted(folder.iterdir())
        if (d / "manifest.toml").is_file()
    }


def template_works() -> dict[str, Fingerprints]:
    """`hotfloat new`'s bundle for every slot that has one, keyed `template/<slot>`."""
    from ..authoring.template import BODIES, bundle_files
    from ..bundle import bundle_from_files

    works = {}
    for slot in sorted(BODIES):
        bundle = bundle_from_files({k: v.encode() for k, v in bundle_files([slot], "template").items()})
        works[f"template/{slot}"] = fingerprint(bundle)
    return works


def scaffolding() -> frozenset[int]:
    """The import adapters' code, as `hotfloat bundle import` writes it beside any Cacheon kernel."""
    from ..authoring.cacheon_adapters import ADAPTERS

    names = {"entry": "entry", "module": "kernel", "prepare": "prepare", "source": "kernels/kernel.py"}
    out: set[int] = set()
    for adapter in ADAPTERS.values():
        code = Template(adapter.source.safe_substitute(names)).safe_substitute(names).encode()
        fp = fingerprint_files({"kernels/adapter.py": code}, [("adapter", "kernels/adapter.py", adapter.entry)])
        out |= _all(fp)
    return frozenset(out)


@functools.cache
def reference_library() -> Library:
    """The library a validator judges against: the committed examples, the templates and the adapters."""
    try:
        data = json.loads(EXAMPLES.read_text())
        examples = {name: Fingerprints.model_validate(fp) for name, fp in data.items()}
    except (OSError, ValueError, ValidationError) as e:
        raise InfrastructureError(f"{EXAMPLES} is unreadable ({e}); rebuild it with tools/copy_table.py") from None
    if any(fp.version != VERSION for fp in examples.values()):
        raise InfrastructureError(f"{EXAMPLES} is from fingerprint version != {VERSION}; rebuild it")
    templates = template_works()
    return Library({**examples, **templates}, frozenset(templates), scaffolding())

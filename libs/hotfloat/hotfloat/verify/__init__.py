"""verify: runs a bundle's kernels in sandboxed children and judges their outputs against trusted references.

Public API: `verify_bundle(bundle, VerifyOptions(...), on_row=None) -> VerifyReport`. Reusable pieces: `wire` (the tensor
codec: raw bytes behind a validated header, no pickle), `ChildSession` (the child launcher speaking it with
deadlines), and `hotfloat.sandbox` (namespaces, rlimits, cgroups).
"""

from . import wire
from .launcher import ChildFault, ChildSession
from .records import VerifyOptions, VerifyReport, VerifyRow
from .runner import applies, device_arch, verify_bundle

__all__ = ["ChildFault", "ChildSession", "VerifyOptions", "VerifyReport", "VerifyRow", "applies", "device_arch",
           "verify_bundle", "wire"]

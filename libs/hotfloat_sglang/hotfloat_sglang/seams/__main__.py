"""Prints the seam registry and its compat rows as one JSON object (read by hotfloat.compat.runner)."""

import json

from . import checks, registry

seams = [{"slots": list(s.slots), "targets": list(s.targets), "after": s.after, "always": s.always} for s in registry()]
print(json.dumps({"seams": seams, "checks": checks()}))

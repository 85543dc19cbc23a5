"""Static compatibility canaries: are the pinned SGLang and Bittensor versions installed, with every symbol and
parameter hotfloat hooks or calls? Necessary after an install or upgrade; it proves nothing about numerics."""

from .runner import CompatReport, CompatRow, check, engine_python
from .chain_table import BITTENSOR_PIN
from .tables import SGLANG_PIN

__all__ = ["BITTENSOR_PIN", "SGLANG_PIN", "CompatReport", "CompatRow", "check", "engine_python"]

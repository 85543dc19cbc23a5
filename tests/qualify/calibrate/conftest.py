"""The synthetic boots beside these tests are importable by name (calibration_boots)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

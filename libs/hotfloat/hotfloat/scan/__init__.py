"""Static scan of bundle code: an AST policy check that never imports the bundle."""

from .checker import scan_source
from .findings import Finding
from .report import OpScan, ScanReport, scan_bundle

__all__ = ["Finding", "OpScan", "ScanReport", "scan_bundle", "scan_source"]

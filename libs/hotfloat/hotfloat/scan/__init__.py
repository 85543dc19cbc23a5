"""Static scan of bundle code: allow-lists over the AST of the text the interpreter reads; never imports the bundle."""

from .checker import scan_source
from .findings import Finding
from .report import OpScan, ScanReport, scan_bundle

__all__ = ["Finding", "OpScan", "ScanReport", "scan_bundle", "scan_source"]

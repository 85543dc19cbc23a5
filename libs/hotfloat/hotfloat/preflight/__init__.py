"""`hotfloat preflight`: three separate questions (device, static, behavioral) before trusting this host with a
verdict. It sits above `env` (identity), `verify` and `compat`, which it runs; nothing below imports it."""

from .checks import QUESTIONS, Check, device_checks, preflight, static_checks

__all__ = ["QUESTIONS", "Check", "device_checks", "preflight", "static_checks"]

"""hotfloat: admit and reward only correct, reproducibly faster GPU kernels for a serving engine's slots."""

__version__ = "0.1.0"
ABI_VERSION = "hotfloat-op-abi-v1"

"""The device `auto` stands for, in one place for the commands and the validator's config."""


def resolve_device(device: str) -> str:
    """auto -> cuda when torch sees a GPU, else cpu; any other name is returned as given (asking for cuda without a
    GPU is left to whoever runs there, which says so)."""
    if device != "auto":
        return device
    import torch  # only a caller that must choose pays for it

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu_name() -> str | None:
    """The name NVML gives the GPU a CUDA process here would use (the first of CUDA_VISIBLE_DEVICES, by index or
    UUID), without loading torch; None where there is no driver or no GPU. Calibration records are per device model,
    and a qualification's rule is the record of the GPU it runs on."""
    import ctypes
    import os

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    if nvml.nvmlInit_v2() != 0:
        return None
    try:
        first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
        handle, name = ctypes.c_void_p(), ctypes.create_string_buffer(96)
        if first.startswith(("GPU-", "MIG-")):
            rc = nvml.nvmlDeviceGetHandleByUUID(first.encode(), ctypes.byref(handle))
        else:
            rc = nvml.nvmlDeviceGetHandleByIndex_v2(int(first) if first.isdigit() else 0, ctypes.byref(handle))
        if rc != 0 or nvml.nvmlDeviceGetName(handle, name, 96) != 0:
            return None
        return name.value.decode(errors="replace")
    finally:
        nvml.nvmlShutdown()

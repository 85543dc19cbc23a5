"""The device `auto` stands for, in one place for the commands and the validator's config."""


def resolve_device(device: str) -> str:
    """auto -> cuda when torch sees a GPU, else cpu; any other name is returned as given (asking for cuda without a
    GPU is left to whoever runs there, which says so)."""
    if device != "auto":
        return device
    import torch  # only a caller that must choose pays for it

    return "cuda" if torch.cuda.is_available() else "cpu"

"""The validator-owned model for SGLang engines: a Hugging Face checkpoint generated from a preset's config with
random weights (norm weights 1 + 0.1 randn, so the norms do real work), written once by a trusted process and
shown read-only to every engine. No download; the same preset and weight draw (torch's generator started at
`EngineSpec.weight_seed`, never the workload seed) always give the same model, and the engine identity hashes its
config.

The final norm's weights are scaled by FINAL_NORM_SCALE so greedy choices are clear: random weights give a nearly
flat next-token distribution, and on the H200 (Qwen2-0.5B shape, bf16) 48% of the baseline's top-2 gaps were within
the gate's 0.1 tolerance, so a non-bit-exact kernel's completion legitimately diverged at a near tie after a median
of 12 of 256 tokens and the gate compared little after that. Scaled by 8, 7% of the gaps are within 0.1 (measured on
CPU in fp32 on the same config).

    python -m hotfloat.qualify.checkpoint PRESET DTYPE DRAW OUT_DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from ..errors import InfrastructureError
from .records import EngineSpec

CACHE_ENV = "HOTFLOAT_MODEL_CACHE"
ARCHES = {"qwen2": "Qwen2", "llama": "Llama", "mixtral": "Mixtral"}
"""A preset's `arch` -> the transformers model family its checkpoint is written as (SGLang serves each by name)."""
FINAL_NORM_SCALE = 8.0


def ensure(preset: str, dtype: str, draw: int, timeout_s: float = 600.0) -> Path:
    """The checkpoint directory for (preset, dtype, weight draw), generated in a child process if not cached yet."""
    from ..engine.presets import PRESETS

    key = hashlib.sha256(
        json.dumps([PRESETS[preset], dtype, draw, FINAL_NORM_SCALE], sort_keys=True).encode()
    ).hexdigest()[:16]
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "hotfloat" / "qualify-models")
    out = root / f"{preset}-{dtype}-{draw}-{key}"
    if (out / "done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "hotfloat.qualify.checkpoint", preset, dtype, str(draw), str(out)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        raise InfrastructureError(f"generating the {preset} checkpoint took over {timeout_s:.0f} s") from None
    if r.returncode != 0:
        raise InfrastructureError(f"generating the {preset} checkpoint failed: {r.stderr.strip()[-600:]}")
    (out / "done").write_text("ok\n")
    return out


def model_dir(engine: EngineSpec) -> str | None:
    """The checkpoint an SGLang engine serves: the validator's own (`model_path`) or the preset's, generated once;
    None for the transformers stand-in, which builds its model from the preset in the engine process."""
    if engine.kind != "sglang":
        return None
    if engine.model_path:
        if not os.path.isfile(os.path.join(engine.model_path, "config.json")):
            raise InfrastructureError(f"--model {engine.model_path}: no config.json there")
        return os.path.abspath(engine.model_path)
    return str(ensure(engine.preset, engine.dtype, engine.weight_seed))


def write(preset: str, dtype: str, draw: int, out: Path) -> None:
    import torch
    import transformers

    from ..slots import DTYPES
    from ..engine.presets import PRESETS

    spec = dict(PRESETS[preset])
    arch = spec.pop("arch")
    name = ARCHES[arch]
    config_cls, model_cls = getattr(transformers, f"{name}Config"), getattr(transformers, f"{name}ForCausalLM")
    config = config_cls(**spec, max_position_embeddings=4096, rms_norm_eps=1e-6)
    torch.manual_seed(draw)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = model_cls(config)
    gen = torch.Generator(device="cpu").manual_seed(draw + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(
                    (1.0 + 0.1 * torch.randn(p.shape, generator=gen))
                    * (FINAL_NORM_SCALE if name == "model.norm.weight" else 1.0)
                )
    model.to(DTYPES[dtype]).save_pretrained(out)


if __name__ == "__main__":
    write(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))

"""`hotfloat env`: the environment identity every verify, bench and qualification record embeds."""

import click

from ..env import collect
from .output import emit_json, json_option, table


@click.command("env")
@json_option
def env(as_json: bool) -> None:
    """Show this host's environment identity (GPU, driver, CUDA, Torch, Triton, SGLang, image, revision).

    Fields that cannot be known here are empty and say why; on a CPU host every GPU field is empty.
    """
    identity = collect()
    if as_json:
        emit_json(identity.model_dump(mode="json"))
        return
    data = identity.model_dump(mode="json", exclude={"gpus", "absent"})
    table(
        "hotfloat env",
        ["field", "value", "why empty"],
        [(name, value, identity.absent.get(name, "")) for name, value in data.items()],
    )
    if identity.gpus:
        table(
            "GPU readings",
            ["index", "name", "SM MHz", "max SM MHz", "mem MHz", "power W", "limit W", "temp C", "persistence"],
            [
                (
                    g.index,
                    g.name,
                    g.sm_clock_mhz,
                    g.max_sm_clock_mhz,
                    g.mem_clock_mhz,
                    g.power_draw_w,
                    g.power_limit_w,
                    g.temperature_c,
                    g.persistence_mode,
                )
                for g in identity.gpus
            ],
        )

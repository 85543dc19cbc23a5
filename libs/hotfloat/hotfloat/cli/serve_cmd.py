"""`hotfloat serve NAME`: run one gRPC service (compiler, admission or qualification); the containers' entrypoint."""

from __future__ import annotations

import click

from ..errors import InputError
from ..qualify.records import ATTENTION_BACKENDS
from ..slots import DTYPES

SERVICE_NAMES = ("compiler", "admission", "qualification")


@click.command("serve")
@click.argument("name", type=click.Choice(SERVICE_NAMES))
@click.option(
    "--socket", "socket_path", type=click.Path(dir_okay=False), help="Unix socket to listen on (the default transport)."
)
@click.option(
    "--listen", help="HOST:PORT to listen on instead of a socket (port 0 picks one); beyond loopback only with --tls-*."
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False),
    help="File holding the deployment token callers must present (default: $HOTFLOAT_TOKEN).",
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default="cpu",
    show_default=True,
    help="Where admission verifies and qualification runs.",
)
@click.option(
    "--gpu",
    type=click.IntRange(0),
    help="Admission or qualification with --device cuda: use only this "
    "GPU (as nvidia-smi numbers it); candidates' sandboxes see only its device node.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=2,
    show_default=True,
    help="Library calls run at once; up to 4x this many calls may wait, more are refused.",
)
@click.option(
    "--verify-max-shapes", type=click.IntRange(1), help="Admission: only the first N shapes per dtype (quick runs)."
)
@click.option(
    "--verify-dtype",
    "verify_dtypes",
    multiple=True,
    type=click.Choice(sorted(DTYPES)),
    help="Admission: only these dtypes (repeatable).",
)
@click.option(
    "--rule-from",
    "rule_from",
    type=click.Path(dir_okay=False),
    help="Qualification: decide with the rule a calibration record chose (e.g. docs/calibration-h200.json).",
)
@click.option(
    "--attention",
    type=click.Choice(ATTENTION_BACKENDS),
    default=None,
    help="Qualification: SGLang's attention backend in every engine [default: the GPU's: production's (flashinfer) "
    "where a packaged calibration record was made on it, else its record's].",
)
@click.option("--tls-ca", type=click.Path(exists=True, dir_okay=False), help="CA for mutual TLS (TCP only).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="Server certificate for mutual TLS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="Server key for mutual TLS.")
def serve(
    name,
    socket_path,
    listen,
    token_file,
    device,
    gpu,
    concurrency,
    verify_max_shapes,
    verify_dtypes,
    rule_from,
    attention,
    tls_ca,
    tls_cert,
    tls_key,
) -> None:
    """Serve NAME until SIGTERM; prints the address it listens on once it is ready."""
    from hotfloat_services.common.auth import load_token
    from hotfloat_services.common.transport import Tls
    from hotfloat_services.serve import serve_forever, start

    from ..validator import StageConfig

    if bool(socket_path) == bool(listen):
        raise InputError("give exactly one of --socket PATH or --listen HOST:PORT")
    tls_parts = (tls_ca, tls_cert, tls_key)
    if any(tls_parts) and not all(tls_parts):
        raise InputError("mutual TLS needs all of --tls-ca, --tls-cert and --tls-key")
    if rule_from and name != "qualification":
        raise InputError("--rule-from applies only to the qualification service")
    if attention is not None and name != "qualification":
        raise InputError("--attention applies only to the qualification service")
    if gpu is not None and (name == "compiler" or device != "cuda"):
        raise InputError("--gpu applies to admission and qualification with --device cuda")
    tls = Tls.load(*tls_parts) if all(tls_parts) else None
    if gpu is not None:
        from ..sandbox.gpus import pin

        chosen = pin(gpu)
        click.echo(f"{name} uses only GPU {gpu}: {chosen.uuid} at {chosen.bus}, /dev/nvidia{chosen.minor}", err=True)
    calibration = None
    if rule_from:
        from ..qualify.calibration import read_calibration

        calibration = read_calibration(rule_from)
    config = StageConfig(
        device=device,
        verify_max_shapes=verify_max_shapes,
        verify_dtypes=verify_dtypes or None,
        qualify_calibration=calibration,
        qualify_attention=attention,
    )
    running = start(
        name, socket_path or listen, token=load_token(token_file), config=config, concurrency=concurrency, tls=tls
    )
    serve_forever(running, ready=lambda target: click.echo(f"serving {name} on {target}", err=True))

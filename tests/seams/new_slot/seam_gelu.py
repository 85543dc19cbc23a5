"""The activation.gelu_and_mul seam: SGLang's GeluAndMul forward methods (a seam added in a test)."""

from ..seam import Seam, callable_check

SLOT = "activation.gelu_and_mul"
TARGETS = tuple(f"sglang.srt.layers.activation.GeluAndMul.{m}" for m in ("forward_cuda", "forward_native"))


def hook(router):
    """An AROUND hook: the tanh layer's plain call is the slot; any other goes stock, counted."""

    def around(original, layer, x, *args, **kwargs):
        if args or kwargs or layer.approximate != "tanh":
            router.count_stock(SLOT)
            return original(layer, x, *args, **kwargs)
        return router.call(SLOT, lambda x: original(layer, x), x)

    return around


SEAMS = (
    Seam(
        slots=(SLOT,),
        targets=TARGETS,
        hook=hook,
        checks=(
            *(callable_check(t.rsplit(".", 2)[-2] + "." + t.rsplit(".", 1)[-1], t, ["self", "x"]) for t in TARGETS),
            callable_check(
                "GeluAndMul.__init__", "sglang.srt.layers.activation.GeluAndMul.__init__", ["approximate"], order=False
            ),
        ),
    ),
)

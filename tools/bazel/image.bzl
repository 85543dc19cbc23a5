"""Bazel rules for the images: each step is one `hotfloat image ...` action on the project venv.

The steps fetch Debian packages and wheels (checked against hashed locks), need root for mmdebstrap, and write
hundreds of MB, so they run unsandboxed; Bazel still caches them by their declared inputs.
"""

load("@hotfloat_venv//:defs.bzl", "PYTHON")

_TAGS = ["no-sandbox", "requires-network", "no-remote"]
_CLI = PYTHON + " -c 'from hotfloat.cli.main import main; main()'"

def image_layer(name, step, srcs, args):
    """A layer tar produced by `hotfloat image STEP ... --out $@` (step: base or stack)."""
    native.genrule(
        name = name,
        srcs = srcs,
        outs = [name + ".tar"],
        cmd = "%s image %s %s --out $@" % (_CLI, step, args),
        tags = _TAGS,
        message = "hotfloat image " + step,
    )

def _oci_image_impl(ctx):
    out = ctx.actions.declare_directory(ctx.label.name)
    args = ["image", "build", ctx.attr.image, "--flavor", ctx.attr.flavor, "--repo", ".",
            "--base-tar", ctx.file.base.path, "--out", out.path]
    inputs = [ctx.file.base] + ctx.files.srcs
    if ctx.file.stack:
        args += ["--stack-tar", ctx.file.stack.path]
        inputs.append(ctx.file.stack)
    ctx.actions.run_shell(
        outputs = [out],
        inputs = inputs,
        command = _CLI + ' "$@"',
        arguments = args,
        use_default_shell_env = True,
        execution_requirements = {tag: "" for tag in _TAGS},
        mnemonic = "OciImage",
        progress_message = "Building image %s (%s)" % (ctx.attr.image, ctx.attr.flavor),
    )
    return [DefaultInfo(files = depset([out]))]

oci_image = rule(
    implementation = _oci_image_impl,
    attrs = {
        "image": attr.string(mandatory = True, doc = "Folder under images/ holding image.toml and its locks."),
        "flavor": attr.string(default = "cpu"),
        "base": attr.label(mandatory = True, allow_single_file = True),
        "stack": attr.label(allow_single_file = True, doc = "Shared stack layer; omitted for the cuda worker."),
        "srcs": attr.label_list(allow_files = True, doc = "Spec, locks and project sources (the action's inputs)."),
    },
    doc = "An OCI image layout directory built by `hotfloat image build`.",
)

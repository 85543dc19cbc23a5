"""copies/inline.py: wrappers, helpers and temporaries come back to one form, on both sides of a comparison."""

from hotfloat.copies.fingerprint import fingerprint_files

OPS = [("norm.rmsnorm:default", "kernels/norm.py", "rmsnorm")]


def op(files: dict) -> set[int]:
    return set(fingerprint_files({k: v.encode() for k, v in files.items()}, OPS).ops["norm.rmsnorm:default"])


def test_calls_through_wrappers_are_the_calls(kernel):
    wrapped = kernel.replace("torch.rsqrt(", "_rs(").replace(".copy_(", ".copy_(") + (
        "\n\ndef _rs(*a, **k):\n    return torch.rsqrt(*a, **k)\n"
    )
    assert op({"kernels/norm.py": wrapped}) == op({"kernels/norm.py": kernel})


def test_three_address_code_is_the_expression_it_was_split_from(kernel):
    split = kernel.replace(
        "        out[lo:hi].copy_(_scale(block, weight, inv).clamp(-65504.0, 65504.0).to(out.dtype))\n",
        "        t1 = _scale(block, weight, inv)\n        t2 = t1.clamp(-65504.0, 65504.0)\n"
        "        t3 = t2.to(out.dtype)\n        out[lo:hi].copy_(t3)\n",
    )
    assert op({"kernels/norm.py": split}) == op({"kernels/norm.py": kernel})


def test_a_helper_inlined_by_hand_is_the_helper_called(kernel):
    by_hand = kernel.replace(
        "        inv = _inv_rms(block, eps)\n",
        "        inv = torch.rsqrt(block.pow(2).mean(dim=-1, keepdim=True) + eps)\n",
    )
    assert op({"kernels/norm.py": by_hand}) == op({"kernels/norm.py": kernel})


def test_helpers_in_another_file_are_followed_and_inlined(kernel):
    entry, helpers = kernel.split("def rmsnorm")
    moved = {
        "kernels/norm.py": "import torch\nfrom .parts import _inv_rms, _scale, ROWS\n\n\ndef rmsnorm" + helpers,
        "kernels/parts.py": entry,
    }
    assert op(moved) == op({"kernels/norm.py": kernel})


def test_a_variable_read_twice_is_kept():
    twice = "import torch\n\n\ndef rmsnorm(x, weight, out, eps=1e-6):\n    y = x.float() * 2\n    out.copy_(y + y)\n"
    once = "import torch\n\n\ndef rmsnorm(x, weight, out, eps=1e-6):\n    out.copy_(x.float() * 2 + x.float() * 2)\n"
    assert op({"kernels/norm.py": twice}) != op({"kernels/norm.py": once})


def test_recursion_and_growth_are_bounded():
    recursive = "def rmsnorm(x, weight, out, eps=1e-6):\n    return rmsnorm(x, weight, out, eps)\n"
    assert op({"kernels/norm.py": recursive})
    doubling = "".join(f"def f{i}(x):\n    f{i + 1}(x)\n    f{i + 1}(x)\n\n\n" for i in range(40))
    doubling += "def f40(x):\n    return x.float().sum() * 2\n\n\ndef rmsnorm(x, weight, out, eps=1e-6):\n    f0(x)\n"
    assert op({"kernels/norm.py": doubling})  # finishes: inlining stops at its node budget

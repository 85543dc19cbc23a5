"""copies/containment.py: the score, the floor, templates as starting points, the common code taken out."""

from hotfloat.copies.containment import FLOOR, THRESHOLD, Earlier, closest
from hotfloat.copies.fingerprint import Fingerprints


def fp(ops: dict[str, range], files: dict[str, range] | None = None) -> Fingerprints:
    return Fingerprints(
        ops={k: list(v) for k, v in ops.items()},
        files={k: list(v) for k, v in (files or {}).items()},
        sources={k: "kernels/k.py" for k in ops},
    )


def test_a_padded_copy_still_holds_all_of_the_earlier_unit():
    earlier = Earlier("e" * 64, fp({"s:default": range(0, 40)}))
    m = closest(fp({"s:default": range(0, 400)}), earlier, frozenset())
    assert m.score == 1.0 and m.is_copy and m.of == "e" * 64 and m.unit == "op s:default"


def test_against_a_template_only_a_candidate_made_of_it_is_a_copy():
    template = Earlier("template/s", fp({"s:default": range(0, 40)}), starting_point=True)
    assert not closest(fp({"s:default": range(0, 400)}), template, frozenset()).is_copy
    assert closest(fp({"s:default": range(0, 44)}), template, frozenset()).is_copy


def test_below_the_floor_nothing_is_judged_and_common_code_does_not_count():
    small = Earlier("e", fp({"s:default": range(0, FLOOR - 1)}))
    assert not closest(fp({"s:default": range(0, FLOOR - 1)}), small, frozenset()).is_copy
    big = Earlier("e", fp({"s:default": range(0, 100)}))
    common = frozenset(range(0, 95))
    assert (
        closest(fp({"s:default": range(0, 100)}), big, common) is None
        or not closest(fp({"s:default": range(0, 100)}), big, common).is_copy
    )


def test_ops_are_compared_with_ops_and_files_with_files():
    earlier = Earlier("e", fp({"s:default": range(0, 50)}, {"kernels/a.py": range(100, 150)}))
    m = closest(fp({"s:default": range(100, 150)}), earlier, frozenset())
    assert m is None
    m = closest(fp({}, {"kernels/b.py": range(100, 150)}), earlier, frozenset())
    assert m.is_copy and (m.unit, m.theirs) == ("file kernels/b.py", "file kernels/a.py")


def test_the_threshold_splits_shares():
    earlier = Earlier("e", fp({"s:default": range(0, 100)}))
    share = int(THRESHOLD * 100)
    assert closest(fp({"s:default": range(100 - share, 200)}), earlier, frozenset()).is_copy
    assert not closest(fp({"s:default": range(101 - share, 200)}), earlier, frozenset()).is_copy

"""images/digests.lock: recorded digests, and a clear failure naming every image that no longer matches."""

import pytest

from hotfloat.errors import InputError
from hotfloat.image.digests import DigestMismatch, check, raise_on_mismatch, read, update
from hotfloat.image.oci import Layout
from hotfloat.verdict import Status


def _layout(tmp_path, name: str, content: bytes):
    tmp_path.mkdir(exist_ok=True)
    layout = Layout(tmp_path / name)
    (tmp_path / f"{name}.bin").write_bytes(content)
    blob = layout.add_file(tmp_path / f"{name}.bin", "application/vnd.oci.image.layer.v1.tar")
    layout.write_image([blob], {}, 1767225600, f"hotfloat-{name}:cpu")
    return tmp_path / name


def test_update_then_check_passes_and_a_changed_image_fails(tmp_path):
    lock = tmp_path / "digests.lock"
    compiler = _layout(tmp_path, "compiler", b"a")
    update(lock, (compiler,))
    assert set(read(lock)) == {"compiler:cpu"}
    rows = check(lock, (compiler,))
    assert [r.status for r in rows] == [Status.PASS]
    raise_on_mismatch(rows)
    changed = _layout(tmp_path / "again", "compiler", b"b")
    rows = check(lock, (changed,))
    assert rows[0].status is Status.FAIL and rows[0].locked != rows[0].built
    with pytest.raises(DigestMismatch, match="compiler:cpu built sha256:"):
        raise_on_mismatch(rows)


def test_an_image_missing_from_the_lock_fails(tmp_path):
    rows = check(tmp_path / "digests.lock", (_layout(tmp_path, "worker", b"w"),))
    assert rows[0].status is Status.FAIL and rows[0].locked is None


@pytest.mark.parametrize("content", [b"\xff\xfe", None])
def test_a_lock_that_is_not_text_or_not_a_file_is_one_input_error(tmp_path, content):
    lock = tmp_path / "digests.lock"
    if content is None:
        lock.symlink_to("/dev/zero")
    else:
        lock.write_bytes(content)
    with pytest.raises(InputError, match="digests.lock: not a digests lock: "):
        read(lock)

"""Storage writes are atomic and the output lock excludes a second run, or makes it wait."""

import threading
import time

import pytest

from hades_ray.pipeline import storage
from hades_ray.pipeline.errors import OutputLockedError
from hades_ray.pipeline.lock import OutputLock


def test_atomic_writes_leave_no_temp_files(tmp_path):
    storage.write(tmp_path / "a" / "b.json", "{}")
    storage.concatenate([str(tmp_path / "a" / "b.json")] * 3, tmp_path / "c.txt")
    assert (tmp_path / "c.txt").read_text() == "{}{}{}"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "b.json", "c.txt"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = tmp_path / "out.jsonl"
    storage.write(target, "old\n")
    with pytest.raises(RuntimeError), storage.atomic_path(target) as tmp:
        tmp.write_text("half a new fi")
        raise RuntimeError("the writer died")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_a_write_that_must_not_overwrite_refuses_an_existing_file(tmp_path):
    target = tmp_path / "judgments.csv"
    with storage.atomic_path(target, replace=False) as tmp:
        tmp.write_text("first")
    with pytest.raises(FileExistsError), storage.atomic_path(target, replace=False) as tmp:
        tmp.write_text("second")
    assert target.read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["judgments.csv"]


def test_lock_excludes_a_second_holder(tmp_path):
    with OutputLock(tmp_path):
        with pytest.raises(OutputLockedError, match="another run"):
            OutputLock(tmp_path).acquire()
    with OutputLock(tmp_path):
        pass  # released: free again


def test_a_waiting_holder_gets_the_lock_once_the_first_releases_it(tmp_path):
    order = []
    first = OutputLock(tmp_path)
    first.acquire()

    def second():
        with OutputLock(tmp_path, wait=True):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.3)
    order.append("first")
    first.release()
    thread.join(10)
    assert order == ["first", "second"] and not (tmp_path / "_lock.json").exists()


def test_a_staged_folder_replaces_its_target_whole_or_not_at_all(tmp_path):
    target = tmp_path / "model"
    storage.write(target / "old.txt", "old")
    with pytest.raises(RuntimeError), storage.staged_folder(target) as stage:
        storage.write(stage / "new.txt", "half")
        raise RuntimeError("the writer died")
    assert [p.name for p in target.iterdir()] == ["old.txt"]
    with storage.staged_folder(target) as stage:
        storage.write(stage / "new.txt", "new")
    assert [p.name for p in tmp_path.iterdir()] == ["model"] and [p.name for p in target.iterdir()] == ["new.txt"]
    storage.delete(target)
    assert not target.exists()


def test_a_copied_folder_replaces_its_target_with_links_kept_as_links(tmp_path):
    source, target = tmp_path / "source", tmp_path / "target"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.txt").write_text("a")
    (source / "link").symlink_to("sub")
    target.mkdir()
    (target / "old.txt").write_text("old")
    storage.copy_folder(source, target)
    assert (target / "sub" / "a.txt").read_text() == "a" and (target / "link").is_symlink()
    assert not (target / "old.txt").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["source", "target"]

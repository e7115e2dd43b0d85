"""Atomic output files and tables."""
import os

import pytest

from hpvm.cli.output import format_table
from hpvm.files import write_atomically


def test_write_atomically_replaces_the_file_when_complete(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    write_atomically(path, lambda handle: handle.write(b"new"))
    assert path.read_text() == "new"


def test_failed_write_leaves_the_existing_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")

    def half_write(handle):
        handle.write(b"ha")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomically(path, half_write)
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_new_file_gets_the_usual_permissions(tmp_path):
    path = tmp_path / "out.txt"
    write_atomically(path, lambda handle: handle.write(b"x"))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_table_aligns_columns_under_headers():
    assert format_table(("a", "bb"), [("xxx", "y")]) == "a    bb\nxxx  y"

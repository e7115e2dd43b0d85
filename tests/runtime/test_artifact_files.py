"""An artifact's files may be made when first read (hpvm.artifact_files):
saving, pickling and reading see the bytes; a file nobody reads is never
made."""
import pickle

from hpvm.artifact_files import ArtifactFiles
from hpvm.target import Artifact


def test_a_file_given_as_a_function_is_made_once_when_first_read():
    made = []

    def text():
        made.append(1)
        return b"module text"

    files = ArtifactFiles({"module.hpvm": text, "kernel.ll": b"ir"})
    assert sorted(files) == ["kernel.ll", "module.hpvm"] and not files.made("module.hpvm")
    assert made == []
    assert files["module.hpvm"] == b"module text" and files["module.hpvm"] == b"module text"
    assert made == [1] and files.made("module.hpvm")


def test_an_artifact_saves_and_pickles_its_deferred_files(tmp_path):
    artifact = Artifact("cpu", {"module.hpvm": lambda: b"printed", "kernel.ll": b"ir"},
                        {"kernels": {"k": 1}}, live={"module": object()})
    artifact.save(tmp_path / "a")
    loaded = Artifact.load(tmp_path / "a")
    assert dict(loaded.files) == {"module.hpvm": b"printed", "kernel.ll": b"ir"}
    assert loaded.live == {} and loaded.metadata == artifact.metadata
    assert dict(pickle.loads(pickle.dumps(artifact.files))) == dict(loaded.files)


def test_files_given_as_a_dict_read_as_before():
    artifact = Artifact("cpu", {"kernels.o": b"\x7fELF"})
    artifact.files["notes.txt"] = b"x"
    assert dict(artifact.files) == {"kernels.o": b"\x7fELF", "notes.txt": b"x"}

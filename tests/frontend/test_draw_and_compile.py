"""``hpvm compile`` and ``hpvm viz`` logic: compile_program loads a file by
path; draw writes a hierarchical SVG."""
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hpvm.frontend import FrontendError
from hpvm.frontend.compile import compile_program
from hpvm.ir.draw import draw, svg
from hpvm.ir.verify import verify

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("spec", ["matmul.py:matmul", "blur.py:blur3x3", "edge_detection.py:edge_detect",
                                  "streaming_pipeline.py:pipeline", "hierarchical.py:builder_version"])
def test_compile_program_builds_each_example(spec):
    module = compile_program(str(EXAMPLES / spec))
    verify(module)


def test_compile_program_names_the_programs_of_a_file_when_one_is_missing():
    with pytest.raises(FrontendError, match="no 'nothing'") as info:
        compile_program(f"{EXAMPLES / 'blur.py'}:nothing")
    assert "blur3x3" in info.value.diagnostics[0].fix


def test_compile_program_needs_file_and_name():
    with pytest.raises(FrontendError, match="does not name a program"):
        compile_program("blur.py")


def test_compile_program_reports_a_missing_file(tmp_path):
    with pytest.raises(FrontendError, match="no such file"):
        compile_program(f"{tmp_path / 'absent.py'}:f")


def texts(document: str) -> list[str]:
    root = ET.fromstring(document)
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_drawing_shows_nodes_replication_hint_and_placement(tmp_path):
    module = compile_program(str(EXAMPLES / "matmul.py:matmul"))
    path = draw(module, tmp_path / "dfg.svg", placement={"matmul": "gpu_opencl"})
    labels = texts(path.read_text())
    assert {"matmul", "@matmul", "[M, N]", "hint gpu", "on gpu_opencl"} <= set(labels)


def test_drawing_shows_internal_nodes_as_clusters_with_their_children():
    module = compile_program(str(EXAMPLES / "hierarchical.py:sharpen"))
    document = svg(module)
    labels = texts(document)
    assert "smooth_scale  (@smooth_scale)" in labels
    assert {"smooth", "scale", "add"} <= set(labels)
    assert 'stroke-dasharray="5,3"' in document          # the cluster outline


def test_drawing_labels_edges_with_buffer_kind_and_streaming():
    module = compile_program(str(EXAMPLES / "streaming_pipeline.py:pipeline"))
    labels = texts(svg(module))
    assert "y→x  1:1  stream" in labels
    assert "frame→x  stream" in labels

"""In Jupyter, a program and an executable show themselves: the dataflow
graph as SVG, and for an executable its placement as an HTML table."""
from hpvm.demo.edge_detection import edge_detect
from hpvm.runtime import compile


def test_a_program_shows_its_dataflow_graph():
    drawing = edge_detect._repr_svg_()
    assert drawing.startswith("<svg") and drawing.rstrip().endswith("</svg>")
    assert all(node.name in drawing for node in edge_detect.build().root_graph.nodes)


def test_an_executable_shows_its_graph_with_targets_and_its_placement():
    exe = compile(edge_detect, targets=["interp"])
    drawing = exe._repr_svg_()
    assert drawing.startswith("<svg") and "interp" in drawing
    table = exe._repr_html_()
    assert table.startswith("<table><tr><th>node</th><th>target</th><th>reason</th></tr>")
    assert table.count("<tr>") == len(exe.placement.targets) + 1
    for key in exe.placement.targets:
        assert f"<td>{key}</td><td>interp</td>" in table


def test_the_placement_table_escapes_what_it_shows():
    exe = compile(edge_detect, targets=["interp"])
    exe.placement.notes.append("a <note> & more")
    assert "<li>a &lt;note&gt; &amp; more</li>" in exe._repr_html_()

"""``hpvm demo``: the README's first command."""
import numpy as np

from hpvm.cli import main
from hpvm.demo.image import png_bytes, read_pgm


def run_demo(tmp_path, capsys, *extra):
    code = main(["demo", "-o", str(tmp_path / "edges.png"), *extra])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line and not line.startswith(("hpvm demo", "wrote"))}
    return code, rows


def small_image(tmp_path):
    image = np.zeros((20, 24), np.uint8)
    image[5:15, 6:18] = 200
    path = tmp_path / "square.pgm"
    path.write_bytes(b"P5\n24 20\n255\n" + image.tobytes())
    return path


def test_demo_checks_every_available_target_against_the_interpreter(tmp_path, capsys):
    code, rows = run_demo(tmp_path, capsys, "--image", str(small_image(tmp_path)))
    assert code == 0
    assert rows["target"] == ["target", "correct", "compile", "run", "note"]
    assert rows["interp"][1] == "yes"
    assert rows["cpu"][1] in ("yes", "-")


def test_demo_writes_the_edge_image(tmp_path, capsys):
    run_demo(tmp_path, capsys, "--image", str(small_image(tmp_path)))
    written = (tmp_path / "edges.png").read_bytes()
    assert written.startswith(b"\x89PNG")


def test_demo_lists_unavailable_targets_with_their_reason(tmp_path, capsys):
    _, rows = run_demo(tmp_path, capsys, "--image", str(small_image(tmp_path)))
    unavailable = [row for row in rows.values() if row[1] == "-"]
    assert all("not available:" in " ".join(row) for row in unavailable)


def test_pgm_images_read_back_what_was_written():
    pixels = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    image = read_pgm(b"P5\n# comment\n4 3\n255\n" + pixels.tobytes())
    np.testing.assert_allclose(image * 255, pixels, atol=1e-4)
    assert png_bytes(image)[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_saves_a_program_that_run_accepts(tmp_path, capsys):
    assert main(["demo", "--image", str(small_image(tmp_path)), "-o", str(tmp_path / "e.png"),
                 "--save", str(tmp_path)]) == 0
    outputs = tmp_path / "out.npz"
    assert main(["run", str(tmp_path / "blur.hpvm"), "--inputs", str(tmp_path / "blur_inputs.npz"),
                 "--outputs", str(outputs)]) == 0
    assert outputs.exists()


def test_demo_says_which_run_times_are_an_emulations(tmp_path, capsys):
    _, rows = run_demo(tmp_path, capsys, "--image", str(small_image(tmp_path)))
    fpga = rows.get("fpga_aoc")
    if fpga is None or fpga[1] != "yes":
        return  # fpga_aoc not installed or not available here: nothing ran on it
    assert "(emulated" in " ".join(fpga)
    assert "emulated" not in " ".join(rows["cpu"])

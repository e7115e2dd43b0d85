"""The differential corpus: programs with input generators and numpy
references, run by every target.

    from tests.corpus.programs import CORPUS     # or load this file by path
    for program in CORPUS:
        module = program.build()
        inputs = program.make_inputs(np.random.default_rng(0))
        expected = program.reference(inputs)     # numpy, independent of hpvm
        ... run module on a target, compare with rtol / atol ...

A streaming program has ``make_frames``: ``make_inputs`` then gives the
inputs fixed at ``start``, ``make_frames(rng)`` the frames to ``push``, and
``reference({**fixed, **frame})`` the result ``pop`` returns for a frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from hpvm.frontend.compile import load_python_file

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"


@dataclass(frozen=True)
class CorpusProgram:
    name: str
    build: Callable
    make_inputs: Callable
    reference: Callable
    rtol: float = 1e-5
    atol: float = 1e-5
    make_frames: Callable | None = None


def _example(name: str):
    return load_python_file(EXAMPLES / f"{name}.py")


def _examples() -> list[CorpusProgram]:
    matmul, blur, edges = _example("matmul"), _example("blur"), _example("edge_detection")
    hier, stream = _example("hierarchical"), _example("streaming_pipeline")
    return [
        CorpusProgram("matmul", matmul.matmul.build, matmul.make_inputs, matmul.reference, 1e-4, 1e-4),
        CorpusProgram("blur3x3", blur.blur3x3.build, blur.make_inputs, blur.reference),
        CorpusProgram("edge_detect", edges.edge_detect.build, edges.make_inputs, edges.reference, 0, 0),
        CorpusProgram("sharpen", hier.sharpen.build, hier.make_inputs, hier.reference),
        CorpusProgram("nested_builder", lambda: hier.builder_version().build(),
                      lambda rng: {"x": rng.standard_normal(17, dtype=np.float32)},
                      lambda v: {"y": (v["x"] * 2 + 1) * 2}),
        CorpusProgram("stream_pipeline", lambda: stream.pipeline().build(), lambda rng: dict(stream.FIXED),
                      lambda v: stream.reference_frame(v["frame"], v["gain"], v["bias"]),
                      make_frames=stream.make_frames),
    ]


def _small() -> list[CorpusProgram]:
    p = load_python_file(HERE / "small_programs.py")

    def ints(rng, lo, hi, n=50, dtype=np.int32):
        return rng.integers(lo, hi, n).astype(dtype)

    def f32(rng, *shape):
        return rng.standard_normal(shape, dtype=np.float32)

    def nonzero(rng):
        values = ints(rng, -9, 9)
        values[values == 0] = 3
        return values

    return [
        CorpusProgram("saxpy", p.saxpy.build, lambda rng: {"x": f32(rng, 33), "y": f32(rng, 33),
                                                           "a": np.float32(1.5)}, p.saxpy_ref),
        CorpusProgram("histogram", p.histogram.build, lambda rng: {"values": ints(rng, 0, 1000, 200)},
                      p.histogram_ref, 0, 0),
        CorpusProgram("c_division", p.c_division.build,
                      lambda rng: {"a": ints(rng, -100, 100), "b": nonzero(rng)}, p.c_division_ref, 0, 0),
        CorpusProgram("collatz", p.collatz.build, lambda rng: {"start": ints(rng, 1, 200, 30, np.int64)},
                      p.collatz_ref, 0, 0),
        CorpusProgram("fir5", p.fir5.build, lambda rng: {"x": f32(rng, 40)}, p.fir5_ref),
        CorpusProgram("fork_join", p.fork_join.build, lambda rng: {"x": f32(rng, 40)}, p.fork_join_ref, 1e-5, 1e-5),
        CorpusProgram("prefix_sum", p.prefix_sum.build, lambda rng: {"x": ints(rng, -50, 50, 64, np.int64)},
                      p.prefix_sum_ref, 0, 0),
        CorpusProgram("jacobi", p.jacobi.build, lambda rng: {"grid": f32(rng, 20)}, p.jacobi_ref),
        CorpusProgram("volume", p.volume.build, lambda rng: {"v": f32(rng, 3, 4, 5)}, p.volume_ref),
        CorpusProgram("reduce_sum", p.reduce_sum.build, lambda rng: {"x": ints(rng, -1000, 1000, 100)},
                      p.reduce_sum_ref, 0, 0),
    ]


CORPUS: list[CorpusProgram] = _examples() + _small()
"""Every program of the corpus, examples first."""


def by_name(name: str) -> CorpusProgram:
    for program in CORPUS:
        if program.name == name:
            return program
    raise KeyError(f"no corpus program '{name}'; known: {', '.join(p.name for p in CORPUS)}")

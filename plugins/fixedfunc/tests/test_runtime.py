"""The accelerators at run time: inputs they cannot take are refused with
the node and the fix, executables save and load, backends are chosen by
option.  (sdk/tests/test_conformance_kit.py runs the conformance kit on
fixedfunc with the other bundled targets.)"""
import numpy as np
import pytest

import hpvm
from hpvm.errors import ExecutionError, HpvmError

from benchmarks.programs import ms_fft, ms_gemm


@pytest.fixture(scope="module")
def fft_executable():
    return hpvm.compile(ms_fft.ms_fft, targets=["fixedfunc"], options={"backend": "numpy"})


def fft_inputs(signals: int, points: int) -> dict:
    rng = np.random.default_rng(0)
    real_twid, img_twid = ms_fft.twiddles(points)
    return {"real": rng.uniform(-1, 1, (signals, points)), "img": rng.uniform(-1, 1, (signals, points)),
            "real_twid": real_twid, "img_twid": img_twid}


def test_the_fft_chain_is_one_launch_reported_as_emulated(fft_executable):
    (members,) = fft_executable.placement.partitions.values()
    assert len(members) == ms_fft.STAGES
    assert any("fft accelerator" in note for note in fft_executable.placement.notes)
    fft_executable(**fft_inputs(2, 64))
    assert "fixedfunc (emulated (numpy))" in fft_executable.report().format()


def test_conjugated_twiddles_give_the_inverse_transform(fft_executable):
    inputs = fft_inputs(2, 32)
    inputs["img_twid"] = -inputs["img_twid"]
    out = fft_executable(**{k: v.copy() for k, v in inputs.items()})
    spectrum = np.fft.ifft(inputs["real"] + 1j * inputs["img"], axis=1) * 32
    order = ms_fft.bit_reversed(32)
    np.testing.assert_allclose(out["real"], spectrum.real[:, order], atol=1e-12)
    np.testing.assert_allclose(out["img"], spectrum.imag[:, order], atol=1e-12)


@pytest.mark.parametrize("change, words", [
    (lambda inputs: {**fft_inputs(2, 48), "real_twid": inputs["real_twid"][:24], "img_twid": inputs["img_twid"][:24]},
     "48 points; the FFT accelerator takes powers of two"),
    (lambda inputs: {**fft_inputs(1, 2048)}, "2048 points; the program's stage nodes transform at most 1024"),
    (lambda inputs: {**inputs, "real_twid": inputs["real_twid"] * 0.5}, "twiddle tables are not"),
])
def test_inputs_the_accelerator_cannot_take_are_refused_with_the_node_and_the_fix(fft_executable, change, words):
    with pytest.raises(ExecutionError) as caught:
        fft_executable(**change(fft_inputs(2, 64)))
    message = str(caught.value)
    assert words in message and "fixedfunc_part" in message and "targets=['cpu']" in message


def test_a_saved_executable_runs_after_loading(tmp_path):
    exe = hpvm.compile(ms_gemm.ms_gemm, targets=["fixedfunc"])
    exe.save(tmp_path / "gemm")
    loaded = hpvm.load(tmp_path / "gemm")
    inputs = ms_gemm.make_inputs("small", np.random.default_rng(1))
    np.testing.assert_allclose(loaded(**inputs)["prod"], inputs["m1"] @ inputs["m2"], rtol=1e-12)


def test_an_unknown_backend_is_named():
    with pytest.raises(HpvmError, match="unknown backend 'fpga'; use auto, numpy, torch"):
        hpvm.compile(ms_gemm.ms_gemm, targets=["fixedfunc"], options={"backend": "fpga"})


def test_the_torch_backend_computes_what_numpy_does():
    pytest.importorskip("torch")
    inputs = fft_inputs(3, 128)
    results = [hpvm.compile(ms_fft.ms_fft, targets=["fixedfunc"], options={"backend": backend})(
        **{k: v.copy() for k, v in inputs.items()}) for backend in ("numpy", "torch:cpu")]
    for key in ("real", "img"):
        np.testing.assert_allclose(results[1][key], results[0][key], rtol=1e-10, atol=1e-10)

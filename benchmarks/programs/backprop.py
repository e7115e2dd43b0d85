"""Rodinia backprop: one training step of a two-layer perceptron (input ->
hidden -> output) whose input layer is large.

Rodinia 3.1, ``backprop`` (``bpnn_train_cuda``: the CUDA kernels
``bpnn_layerforward_CUDA`` and ``bpnn_adjust_weights_cuda`` around host
code in ``backprop.c``).  The step, node by node:

- ``layerforward``: partial sums of input x input_weights for every hidden
  unit over blocks of input rows (Rodinia: blocks of 16 rows, one CUDA
  block each; here PARTIALS blocks of equal length);
- ``hidden_layer``: hidden unit j = squash(bias weight + the partial sums),
  squash(x) = 1 / (1 + e^-x) (the host loop after the kernel);
- ``output_and_errors``: the small hidden -> output layer, the output
  deltas o (1 - o) (t - o) and the hidden deltas h (1 - h) sum_k delta_k w_jk
  (host code: ``bpnn_layerforward``, ``bpnn_output_error``,
  ``bpnn_hidden_error``; one task node);
- ``adjust_hidden`` and ``adjust_input``: w += dw, prev = dw with
  dw = ETA delta_j y_k + MOMENTUM prev_kj, row 0 being the bias (y = 1)
  (``bpnn_adjust_weights`` on the host, ``bpnn_adjust_weights_cuda``).

Unit 0 of each layer is the bias unit: it reads as 1 whatever the buffer
holds, and column 0 of a weight matrix (into a bias unit) is never used.

Deviations: Rodinia draws every weight from U[0, 1), which with 65536
inputs drives every hidden unit to exactly 1.0 and makes the input-weight
update a no-op (zero deltas); here the input weights are U(-1, 1) / sqrt(N)
so the units stay in the sigmoid's live range, and the previous weight
changes (zero after Rodinia's allocation) are small random values so the
momentum term is exercised.  Arithmetic is f32 throughout (the host part
of Rodinia is C with double constants).
"""
import numba
import numpy as np

import hpvm.lang as hl
from hpvm.lang import Buffer, InOut, buffer, exp, f32, parallel_loop, task

from benchmarks.peers import numba_peer
from benchmarks.suite import Benchmark

ETA = 0.3
MOMENTUM = 0.3
PARTIALS = 128
HIDDEN, OUTPUTS = 16, 1                                # Rodinia's layer sizes
INPUTS = {"small": 4_096, "large": 1_048_576}          # Rodinia's default run: 65536


@hl.kernel
def squash(x: f32) -> f32:
    return 1.0 / (1.0 + exp(-x))


@hl.program
def backprop(input_units: Buffer[f32, "N1"], input_weights: InOut[Buffer[f32, "N1", "H1"]],
             input_prev_weights: InOut[Buffer[f32, "N1", "H1"]],
             hidden_weights: InOut[Buffer[f32, "H1", "O1"]],
             hidden_prev_weights: InOut[Buffer[f32, "H1", "O1"]], target: Buffer[f32, "O1"]):
    partial = buffer(f32, (PARTIALS, "H1"))
    hidden_units = buffer(f32, ("H1",))
    hidden_delta = buffer(f32, ("H1",))
    output_units = buffer(f32, ("O1",))
    output_delta = buffer(f32, ("O1",))
    for block, j in parallel_loop(PARTIALS, H1, ins=(input_units, input_weights), outs=(partial,),
                                  name="layerforward"):
        rows = (N1 - 1 + PARTIALS - 1) // PARTIALS
        first = 1 + block * rows
        total: f32 = 0.0
        for k in range(first, min(first + rows, N1)):
            total += input_weights[k, j] * input_units[k]
        partial[block, j] = total
    for j in parallel_loop(H1, ins=(partial, input_weights), outs=(hidden_units,), name="hidden_layer"):
        total: f32 = input_weights[0, j]
        for block in range(PARTIALS):
            total += partial[block, j]
        hidden_units[j] = squash(total) if j > 0 else 1.0
    with task(ins=(hidden_units, hidden_weights, target),
              outs=(output_units, output_delta, hidden_delta), name="output_and_errors"):
        output_units[0] = 1.0
        for k in range(1, O1):
            net: f32 = hidden_weights[0, k]
            for j in range(1, H1):
                net += hidden_weights[j, k] * hidden_units[j]
            out = squash(net)
            output_units[k] = out
            output_delta[k] = out * (1.0 - out) * (target[k] - out)
        for j in range(1, H1):
            error: f32 = 0.0
            for k in range(1, O1):
                error += output_delta[k] * hidden_weights[j, k]
            unit = hidden_units[j]
            hidden_delta[j] = unit * (1.0 - unit) * error
    for j, k in parallel_loop(H1, O1, ins=(hidden_units, output_delta),
                              outs=(hidden_weights, hidden_prev_weights), name="adjust_hidden"):
        if k > 0:
            change = ETA * output_delta[k] * hidden_units[j] + MOMENTUM * hidden_prev_weights[j, k]
            hidden_weights[j, k] += change
            hidden_prev_weights[j, k] = change
    for k, j in parallel_loop(N1, H1, ins=(input_units, hidden_delta),
                              outs=(input_weights, input_prev_weights), name="adjust_input"):
        if j > 0:
            unit = input_units[k] if k > 0 else 1.0
            change = ETA * hidden_delta[j] * unit + MOMENTUM * input_prev_weights[k, j]
            input_weights[k, j] += change
            input_prev_weights[k, j] = change
    return hidden_units, output_units


def make_inputs(size: str, rng: np.random.Generator) -> dict:
    inputs, hidden, outputs = INPUTS[size] + 1, HIDDEN + 1, OUTPUTS + 1

    def uniform(shape, scale):
        return (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)
    return {
        "input_units": rng.random(inputs, dtype=np.float32),
        "input_weights": uniform((inputs, hidden), 1 / np.sqrt(inputs)),
        "input_prev_weights": uniform((inputs, hidden), 0.01),
        "hidden_weights": uniform((hidden, outputs), 1.0),
        "hidden_prev_weights": uniform((hidden, outputs), 0.01),
        "target": rng.random(outputs, dtype=np.float32),
    }


def _squash(x):
    return 1 / (1 + np.exp(-x))


def _adjust(weights, prev, delta, units):
    """Rodinia's bpnn_adjust_weights: columns 1.., unit 0 is the bias."""
    units = np.concatenate([[1.0], units[1:]])
    change = ETA * np.outer(units, delta[1:]) + MOMENTUM * prev[:, 1:]
    weights, prev = weights.copy(), prev.copy()
    weights[:, 1:] += change
    prev[:, 1:] = change
    return weights, prev


def reference(inputs: dict) -> dict:
    """numpy, in float64 (the tolerance covers the f32 program)."""
    x = {name: np.asarray(value, dtype=np.float64) for name, value in inputs.items()}
    units = np.concatenate([[1.0], x["input_units"][1:]])
    hidden = _squash(units @ x["input_weights"])
    hidden[0] = 1.0
    output = _squash(hidden @ x["hidden_weights"])
    output[0] = 1.0
    output_delta = output * (1 - output) * (x["target"] - output)
    output_delta[0] = 0.0
    hidden_delta = hidden * (1 - hidden) * (x["hidden_weights"][:, 1:] @ output_delta[1:])
    hidden_w, hidden_prev = _adjust(x["hidden_weights"], x["hidden_prev_weights"], output_delta, hidden)
    input_w, input_prev = _adjust(x["input_weights"], x["input_prev_weights"], hidden_delta,
                                  x["input_units"])
    results = {"input_weights": input_w, "input_prev_weights": input_prev,
               "hidden_weights": hidden_w, "hidden_prev_weights": hidden_prev,
               "hidden_units": hidden, "output_units": output}
    return {name: value.astype(np.float32) for name, value in results.items()}


@numba.njit(parallel=True)
def _train_numba(units, weights, prev, hidden_weights, hidden_prev, target):
    """The program's steps: parallel blocks of partial sums, the small layers
    sequentially, parallel rows of the weight update."""
    inputs, hidden = weights.shape
    outputs = hidden_weights.shape[1]
    rows = (inputs - 1 + PARTIALS - 1) // PARTIALS
    partial = np.zeros((PARTIALS, hidden), np.float32)
    for block in numba.prange(PARTIALS):
        first = 1 + block * rows
        for k in range(first, min(first + rows, inputs)):
            for j in range(1, hidden):
                partial[block, j] += weights[k, j] * units[k]
    hidden_units = np.ones(hidden, np.float32)
    for j in range(1, hidden):
        total = weights[0, j]
        for block in range(PARTIALS):
            total += partial[block, j]
        hidden_units[j] = np.float32(1) / (np.float32(1) + np.exp(-total))
    output_units = np.ones(outputs, np.float32)
    output_delta = np.zeros(outputs, np.float32)
    for k in range(1, outputs):
        net = hidden_weights[0, k]
        for j in range(1, hidden):
            net += hidden_weights[j, k] * hidden_units[j]
        out = np.float32(1) / (np.float32(1) + np.exp(-net))
        output_units[k] = out
        output_delta[k] = out * (np.float32(1) - out) * (target[k] - out)
    hidden_delta = np.zeros(hidden, np.float32)
    for j in range(1, hidden):
        error = np.float32(0)
        for k in range(1, outputs):
            error += output_delta[k] * hidden_weights[j, k]
        hidden_delta[j] = hidden_units[j] * (np.float32(1) - hidden_units[j]) * error
    hidden_weights, hidden_prev = hidden_weights.copy(), hidden_prev.copy()
    for j in range(hidden):
        for k in range(1, outputs):
            change = (np.float32(ETA) * output_delta[k] * hidden_units[j]
                      + np.float32(MOMENTUM) * hidden_prev[j, k])
            hidden_weights[j, k] += change
            hidden_prev[j, k] = change
    weights, prev = weights.copy(), prev.copy()
    for k in numba.prange(inputs):
        unit = units[k] if k > 0 else np.float32(1)
        for j in range(1, hidden):
            change = np.float32(ETA) * hidden_delta[j] * unit + np.float32(MOMENTUM) * prev[k, j]
            weights[k, j] += change
            prev[k, j] = change
    return weights, prev, hidden_weights, hidden_prev, hidden_units, output_units


def _run_numba(inputs: dict) -> dict:
    names = ("input_weights", "input_prev_weights", "hidden_weights", "hidden_prev_weights",
             "hidden_units", "output_units")
    results = _train_numba(*(inputs[name] for name in (
        "input_units", "input_weights", "input_prev_weights", "hidden_weights",
        "hidden_prev_weights", "target")))
    return dict(zip(names, results))


BENCHMARKS = [Benchmark(
    name="backprop", suite="rodinia", program=backprop, make_inputs=make_inputs,
    reference=reference,
    # f32 against a float64 reference: the hidden sums add N products in f32
    # (about 1e-6 absolute on sums of size 1); that error reaches the deltas
    # and, through ETA * delta * y, the weight changes, which are ~1e-3.
    rtol=1e-4, atol=1e-6,
    peers=(numba_peer(_run_numba),),
    description="one training step of Rodinia's 2-layer network (16 hidden units)")]

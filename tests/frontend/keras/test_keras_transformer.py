"""A Keras 3 transformer block (Embedding, MultiHeadAttention with a
causal mask, LayerNormalization, Dense with gelu) through the PyTorch
backend, on interp and cpu, against Keras itself."""
import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
if keras.backend.backend() != "torch":
    pytest.skip("Keras runs another backend in this process", allow_module_level=True)

from hpvm.frontend.keras import load  # noqa: E402
from hpvm.runtime import compile  # noqa: E402


def transformer_block(vocab=40, length=8, width=16, heads=2):
    ids = keras.Input((length,), dtype="int64", name="ids")
    x = keras.layers.Embedding(vocab, width)(ids)
    attended = keras.layers.MultiHeadAttention(heads, width // heads)(x, x, use_causal_mask=True)
    x = keras.layers.LayerNormalization()(x + attended)
    hidden = keras.layers.Dense(2 * width, activation="gelu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(width)(hidden))
    return keras.Model(ids, keras.layers.Dense(3)(x[:, 0]))


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_keras_transformer_block_matches_keras(target):
    keras.utils.set_random_seed(0)
    model = transformer_block()
    ids = np.random.default_rng(0).integers(0, 40, (2, 8)).astype(np.int64)
    expected = keras.ops.convert_to_numpy(model(ids))
    module = load(model, example_inputs=(ids,))
    out = compile(module, [target])(ids=ids)["y"]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)

"""Keras 3 models (torch backend) through hpvm.frontend.keras.load and
``hpvm compile MODEL.keras``: the same outputs as Keras's own predict, on
the reference interpreter and the cpu target; clear errors for what cannot
be read."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
pytest.importorskip("torch")
if keras.backend.backend() != "torch":  # pragma: no cover - another backend chosen outside
    pytest.skip("keras runs with another backend in this process", allow_module_level=True)

from keras import layers  # noqa: E402

from hpvm.cli import main  # noqa: E402
from hpvm.errors import HpvmError  # noqa: E402
from hpvm.frontend.keras import load  # noqa: E402
from hpvm.runtime import compile  # noqa: E402


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def small_cnn():
    """A Sequential CNN in Keras's channels-last layout: convolutions
    (plain and depthwise), batchnorm with non-trivial statistics, both
    poolings, dense layers with dropout, softmax."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((16, 16, 3), name="image"),
        layers.Conv2D(8, 3, padding="same", activation="relu"),
        layers.BatchNormalization(),
        layers.MaxPooling2D(2),
        layers.DepthwiseConv2D(3, activation="relu"),
        layers.AveragePooling2D(2),
        layers.Conv2D(12, 1),
        layers.Flatten(),
        layers.Dense(16, activation="relu"),
        layers.Dropout(0.5),
        layers.Dense(5),
        layers.Softmax(),
    ])
    norm = model.layers[1]
    rng = np.random.default_rng(1)
    norm.moving_mean.assign(rng.uniform(-0.5, 0.5, 8).astype(np.float32))
    norm.moving_variance.assign(rng.uniform(0.5, 2.0, 8).astype(np.float32))
    return model


def residual_block():
    """A functional model: zero padding, a strided convolution, a
    residual add, a separable convolution, global average pooling."""
    keras.utils.set_random_seed(0)
    image = keras.Input((16, 16, 3), name="image")
    x = layers.ZeroPadding2D(((1, 2), (0, 1)))(image)
    x = layers.Conv2D(6, (4, 2), strides=2, activation="relu")(x)
    skip = layers.Conv2D(6, 1, padding="same")(x)
    x = layers.Add()([layers.ReLU()(x), skip])
    x = layers.SeparableConv2D(8, 3, padding="same")(x)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(image, layers.Dense(3, activation="sigmoid")(x))


def images(count, seed=0):
    return np.random.default_rng(seed).random((count, 16, 16, 3), dtype=np.float32)


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("build", [small_cnn, residual_block])
def test_channels_last_cnns_give_kerass_outputs(build, target):
    model = build()
    module = load(model, batch_size=4)
    assert [p.name for p in module.root_graph.params if p.direction == "in"] == ["image"]
    exe = compile(module, [target])
    for seed in range(2):
        x = images(4, seed)
        np.testing.assert_allclose(exe(image=x)["y"], model.predict(x, verbose=0),
                                   rtol=1e-4, atol=1e-6)


def test_a_functional_model_with_two_inputs_takes_them_by_name():
    keras.utils.set_random_seed(0)
    features = keras.Input((6,), name="features")
    extra = keras.Input((4,), name="extra")
    hidden = layers.Dense(4, activation="tanh")(features)
    model = keras.Model([features, extra], layers.Concatenate()([hidden, extra]))
    exe = compile(load(model, batch_size=3), ["cpu"])
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 6), dtype=np.float32), rng.random((3, 4), dtype=np.float32)
    np.testing.assert_allclose(exe(features=a, extra=b)["y"], model.predict([a, b], verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_a_saved_model_compiles_and_runs_from_the_command_line(tmp_path, capsys):
    model = small_cnn()
    model.save(tmp_path / "cnn.keras")
    assert main(["compile", str(tmp_path / "cnn.keras"), "--targets", "cpu",
                 "-o", str(tmp_path / "cnn.hpvmx")]) == 0
    x = images(1)
    np.savez(tmp_path / "in.npz", image=x)
    assert main(["run", str(tmp_path / "cnn.hpvmx"), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["y"], model.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-6)


def test_a_damaged_file_is_a_one_line_error_naming_it(tmp_path, capsys):
    bad = tmp_path / "broken.keras"
    bad.write_bytes(b"not a zip archive")
    assert main(["compile", str(bad), "--targets", "cpu", "-o", str(tmp_path / "x")]) != 0
    err = capsys.readouterr().err
    assert err.startswith("hpvm: error:") and "broken.keras" in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_open_sizes_ask_for_a_full_shape_or_example_inputs():
    model = keras.Sequential([keras.Input((None, 3), name="seq"), layers.Dense(2)])
    with pytest.raises(HpvmError, match=r"input 'seq' .* open sizes .*example_inputs"):
        load(model)
    x = np.ones((2, 5, 3), np.float32)
    exe = compile(load(model, example_inputs=(x,)), ["interp"])
    np.testing.assert_allclose(exe(seq=x)["y"], model.predict(x, verbose=0), rtol=1e-5)


def test_files_that_are_not_keras_models_are_refused_by_name(tmp_path):
    with pytest.raises(HpvmError, match=r"model\.onnx' is not a Keras model file"):
        load(tmp_path / "model.onnx")
    with pytest.raises(HpvmError, match=r"missing\.keras': no such file"):
        load(tmp_path / "missing.keras")

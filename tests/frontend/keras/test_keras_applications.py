"""keras.applications' MobileNetV2 and ResNet50, whole (weights=None:
nothing downloaded), on a small image through hpvm.frontend.keras.load,
on interp and cpu against Keras's own predict (torch backend)."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
pytest.importorskip("torch")
if keras.backend.backend() != "torch":  # pragma: no cover - another backend chosen outside
    pytest.skip("keras runs with another backend in this process", allow_module_level=True)

from hpvm.frontend.keras import load  # noqa: E402
from hpvm.runtime import compile  # noqa: E402


@pytest.mark.parametrize("name", ["MobileNetV2", "ResNet50"])
def test_application_matches_keras(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, name)(weights=None, input_shape=(64, 64, 3),
                                                  classes=10)
        x = np.random.default_rng(0).standard_normal((1, 64, 64, 3)).astype(np.float32)
        expected = np.asarray(model.predict(x, verbose=0))
    module = load(model)
    port = next(p.name for p in module.root_graph.params if p.direction == "in")
    for target in ("interp", "cpu"):
        got = next(iter(compile(module, [target])(**{port: x}).values()))
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name} on {target}")

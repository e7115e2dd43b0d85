"""HyperMapper 2.2.13 (its latest release) on today's libraries: the two
fixes it needs, in one place, applied before it is imported.

1. It builds ``OneHotEncoder(categories="auto", sparse=False)``; scikit-learn
   1.4 renamed ``sparse`` to ``sparse_output`` and 1.6 removed the old name
   (upstream issue luinardi/hypermapper#84).  Its ``models`` module gets an
   encoder class that accepts the old name.
2. Its ``optimizer`` and ``utility_functions`` modules import
   ``resource_stream`` from ``pkg_resources``, which setuptools 81
   removed.  When ``pkg_resources`` is missing, a module offering only
   ``resource_stream`` (on ``importlib.resources``) stands in for it while
   HyperMapper is imported, and leaves ``sys.modules`` afterwards (so that
   no other library takes it for setuptools').

tests/tune/test_hypermapper_compat.py checks that each fix is still needed
(it fails once upstream fixes its code, so this module can go) and that
HyperMapper runs with them.
"""
from __future__ import annotations

import importlib
import inspect
import importlib.resources
import sys
import types


def load_hypermapper():
    """HyperMapper's ``optimizer`` module, fixed; ImportError (with the
    install command) when HyperMapper is not installed."""
    stand_in = None
    try:
        importlib.import_module("pkg_resources")
    except ImportError:
        stand_in = sys.modules["pkg_resources"] = _pkg_resources_stand_in()
    try:
        models = importlib.import_module("hypermapper.models")
        optimizer = importlib.import_module("hypermapper.optimizer")
    except ImportError as error:
        raise ImportError(f"HyperMapper cannot be imported ({error}); pip install "
                          "'hpvm[tune]' (hypermapper 2.2.13)") from error
    finally:
        if stand_in is not None and sys.modules.get("pkg_resources") is stand_in:
            del sys.modules["pkg_resources"]
    if not getattr(models.OneHotEncoder, "_hpvm_compatible", False):
        models.OneHotEncoder = compatible_one_hot_encoder(models.OneHotEncoder)
    return optimizer


def compatible_one_hot_encoder(encoder_class):
    """A subclass of scikit-learn's OneHotEncoder that takes ``sparse=``
    as the old name of ``sparse_output=``."""
    class OneHotEncoder(encoder_class):
        _hpvm_compatible = True

        def __init__(self, *args, sparse=None, **kwargs):
            if sparse is not None:
                kwargs.setdefault("sparse_output", sparse)
            super().__init__(*args, **kwargs)

    OneHotEncoder.__name__ = OneHotEncoder.__qualname__ = encoder_class.__name__
    # scikit-learn reads the constructor's signature for get_params/clone.
    OneHotEncoder.__init__.__signature__ = inspect.signature(encoder_class.__init__)
    return OneHotEncoder


def _pkg_resources_stand_in() -> types.ModuleType:
    module = types.ModuleType("pkg_resources")
    module.__doc__ = "hpvm's stand-in for setuptools' pkg_resources: resource_stream only."

    def resource_stream(package: str, resource: str):
        return importlib.resources.files(package).joinpath(resource).open("rb")

    module.resource_stream = resource_stream
    return module

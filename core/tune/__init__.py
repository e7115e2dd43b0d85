"""Design-space exploration: the parameters of a program found in its IR
(space.py), configurations that ``hpvm.compile(..., config=...)`` applies
(config.py), the evaluation of samples (evaluate.py), the search engines
(search.py: enumeration, random search, HyperMapper) and the tuning loop
with its record (driver.py, record.py).

    from hpvm.tune import space, tune
    result = tune(program, ["gpu_opencl", "cpu"], inputs, budget=100)
    exe = hpvm.compile(program, config=result.best)
"""
from .space import PASS_PARAMETERS, Parameter, Realisation, Space, TuneError, module_digest, space

__all__ = ["PASS_PARAMETERS", "Parameter", "Realisation", "Space", "TuneError", "module_digest",
           "space"]
from .config import TuningConfig  # noqa: E402
from .driver import TuneResult, tune  # noqa: E402
from .executors import LocalExecutor, RayExecutor  # noqa: E402

__all__ += ["LocalExecutor", "RayExecutor", "TuneResult", "TuningConfig", "tune"]

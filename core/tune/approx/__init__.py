"""ApproxTuner: accuracy-aware approximation tuning of tensor programs.

Knobs (passes/approximate.py) make tensor ops cheaper and less exact;
``approx_tune`` finds the configurations (node -> knob) that meet a QoS
goal, fastest first, as a Pareto curve that ships with the executable.

- knobs.py: which knobs each node may take;
- qos.py: accuracy, PSNR, SSIM, a user's function; the goal;
- measure.py: running a configuration for real;
- predict.py: the profile and the error-composition models (pi1, pi2);
- explore.py: the search over configurations;
- curve.py: the Pareto curve, its JSON and its SVG;
- tuner.py: the tuning loop.
"""
from .curve import ApproxCurve, ApproxPoint
from .knobs import approximable_nodes, knob_choices
from .qos import ApproxError, Goal, QoS, accuracy, custom, psnr, ssim
from .tuner import MODES, ApproxResult, approx_tune

__all__ = ["ApproxCurve", "ApproxError", "ApproxPoint", "ApproxResult", "Goal", "MODES", "QoS",
           "accuracy", "approx_tune", "approximable_nodes", "custom", "knob_choices", "psnr",
           "ssim"]

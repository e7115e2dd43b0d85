"""Quality of service: how good a configuration's outputs are.

A :class:`QoS` scores the program's outputs on the tuning data (higher is
better): ``accuracy(labels)`` is top-1 accuracy in percent, ``psnr()`` and
``ssim()`` compare images with the exact program's outputs, ``custom(fn)``
calls ``fn(outputs, reference) -> float``.  A :class:`Goal` says which
scores are acceptable: at most ``loss`` below the exact program's score
(e.g. 1 percentage point of accuracy), or at least ``minimum`` (e.g. PSNR
>= 30 dB).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...errors import HpvmError


class ApproxError(HpvmError):
    """Approximation tuning cannot go on; the message says why and the fix."""


@dataclass(frozen=True)
class QoS:
    """A named score of outputs (higher is better): ``fn(outputs,
    reference)`` with outputs the program's first output on the whole data
    set and reference the exact program's."""

    name: str
    unit: str
    fn: Callable[[np.ndarray, np.ndarray], float]

    def score(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        try:
            value = float(self.fn(outputs, reference))
        except Exception as error:  # a user's function: report, never crash
            raise ApproxError(f"QoS function '{self.name}' raised {type(error).__name__}: "
                              f"{error} (fix: make it return a number for outputs of shape "
                              f"{tuple(np.shape(outputs))})") from None
        if math.isnan(value):
            raise ApproxError(f"QoS function '{self.name}' returned NaN (fix: return a number)")
        return value


def accuracy(labels: np.ndarray) -> QoS:
    """Top-1 accuracy in percent of outputs [n, classes] against ``labels``."""
    labels = np.asarray(labels).reshape(-1)

    def score(outputs, reference):
        outputs = np.asarray(outputs)
        if outputs.ndim != 2 or outputs.shape[0] != labels.shape[0]:
            raise ApproxError(f"accuracy needs outputs [n, classes] for the {labels.shape[0]} "
                              f"labels, got shape {outputs.shape} (fix: give one label per "
                              "input row, and a classifier's logits as the first output)")
        return 100.0 * float(np.mean(np.argmax(outputs, axis=1) == labels))
    return QoS("accuracy", "%", score)


def psnr(data_range: float | None = None) -> QoS:
    """Peak signal-to-noise ratio in dB against the exact outputs (peak:
    ``data_range``, default the exact outputs' range); identical outputs
    score 100 dB."""
    def score(outputs, reference):
        error = np.mean((np.asarray(outputs, np.float64) - reference) ** 2)
        peak = data_range or float(np.max(reference) - np.min(reference)) or 1.0
        return 100.0 if error == 0 else min(100.0, 10 * math.log10(peak * peak / error))
    return QoS("psnr", "dB", score)


def ssim(data_range: float | None = None, window: int = 7) -> QoS:
    """Mean structural similarity (Wang et al. 2004, a uniform window of
    ``window`` pixels) over the last two axes, against the exact outputs."""
    def score(outputs, reference):
        x = np.asarray(outputs, np.float64)
        y = np.asarray(reference, np.float64)
        peak = data_range or float(np.max(y) - np.min(y)) or 1.0
        c1, c2 = (0.01 * peak) ** 2, (0.03 * peak) ** 2
        mean = lambda a: _box(a, window)  # noqa: E731
        mx, my = mean(x), mean(y)
        vx, vy, cov = mean(x * x) - mx * mx, mean(y * y) - my * my, mean(x * y) - mx * my
        index = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        return float(np.mean(index))
    return QoS("ssim", "", score)


def _box(a: np.ndarray, size: int) -> np.ndarray:
    """Mean over size x size windows of the last two axes (valid part)."""
    size = min(size, a.shape[-1], a.shape[-2])
    sums = np.cumsum(np.cumsum(a, axis=-1), axis=-2)
    sums = np.pad(sums, [(0, 0)] * (a.ndim - 2) + [(1, 0), (1, 0)])
    total = (sums[..., size:, size:] - sums[..., :-size, size:] - sums[..., size:, :-size]
             + sums[..., :-size, :-size])
    return total / (size * size)


def custom(fn: Callable, name: str | None = None, unit: str = "") -> QoS:
    """A user's score ``fn(outputs, reference) -> float`` (higher is better)."""
    return QoS(name or getattr(fn, "__name__", "custom"), unit, fn)


QOS_NAMES = ("accuracy", "psnr", "ssim")


@dataclass(frozen=True)
class Goal:
    """Acceptable scores: ``minimum`` if given, else the baseline's score
    less ``loss``."""

    loss: float | None = None
    minimum: float | None = None

    def __post_init__(self):
        if (self.loss is None) == (self.minimum is None):
            raise ApproxError("give the QoS goal as a loss (e.g. 1 point of accuracy) or as "
                              "a minimum (e.g. 30 dB of PSNR), not both or neither")
        if self.loss is not None and self.loss < 0:
            raise ApproxError(f"a QoS loss of {self.loss} is negative (fix: give a loss >= 0)")

    def threshold(self, baseline: float) -> float:
        return self.minimum if self.minimum is not None else baseline - self.loss

    def describe(self, qos: QoS) -> str:
        unit = f" {qos.unit}" if qos.unit and qos.unit != "%" else ""
        if self.minimum is not None:
            return f"{qos.name} >= {self.minimum:g}{unit}"
        points = " points" if qos.unit == "%" else unit
        return f"{qos.name} loss <= {self.loss:g}{points}"

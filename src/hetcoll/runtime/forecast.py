"""A forecaster in the manner of the Network Weather Service (Wolski, Spring & Hayes 1999).

Several simple predictors run side by side on every measured series; each step, every
predictor is scored by its error on the newest measurement, and the forecast of a series
is the one of the predictor with the least *recent* error (mean absolute error over the
last ``window`` steps).  Series are NumPy arrays of any shape (e.g. an ``N x N x sizes``
array of round-trip times), all forecast at once, each entry choosing its own predictor.

Pure NumPy: no MPI here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["PREDICTORS", "Forecaster"]


def _last(h: np.ndarray) -> np.ndarray:
    return h[-1]


def _mean(h: np.ndarray) -> np.ndarray:
    return h.mean(axis=0)


def _window(k: int, func: Callable) -> Callable[[np.ndarray], np.ndarray]:
    return lambda h: func(h[-k:], axis=0)


def _smooth(alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    def predict(h: np.ndarray) -> np.ndarray:
        s = h[0].astype(float)
        for x in h[1:]:
            s = alpha * x + (1 - alpha) * s
        return s

    return predict


#: name -> function(history (T x ...)) -> forecast of the next value
PREDICTORS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "last": _last,
    "mean": _mean,
    "mean5": _window(5, np.mean),
    "median5": _window(5, np.median),
    "min5": _window(5, np.min),
    "smooth0.1": _smooth(0.1),
    "smooth0.3": _smooth(0.3),
    "smooth0.6": _smooth(0.6),
}


class Forecaster:
    """Feed measurements with :meth:`update`; read :meth:`forecast` and :meth:`winners`.

    Examples
    --------
    >>> f = Forecaster()
    >>> for x in [10.0, 10.0, 30.0, 10.0, 10.0, 10.0]:   # one outlier
    ...     f.update(np.array([x]))
    >>> float(f.forecast()[0])
    10.0
    """

    def __init__(self, window: int = 5, predictors: dict | None = None) -> None:
        self.window = window
        self.predictors = dict(predictors or PREDICTORS)
        self.names = list(self.predictors)
        self.history: list[np.ndarray] = []
        self.errors: list[np.ndarray] = []  # per step: (predictors, *shape) absolute errors

    def update(self, x: np.ndarray) -> None:
        """Add one measurement of every series (an array of the series' shape)."""
        x = np.asarray(x, dtype=float)
        if self.history:
            err = np.abs(self._predictions() - x[None])
            self.errors.append(err)
        self.history.append(x)

    def _predictions(self) -> np.ndarray:
        h = np.stack(self.history)
        return np.stack([self.predictors[n](h) for n in self.names])

    def _scores(self) -> np.ndarray:
        recent = self.errors[-self.window :]
        return np.mean(np.stack(recent), axis=0)  # (predictors, *shape)

    def winners(self) -> np.ndarray:
        """Index into :attr:`names` of the predictor each series trusts now."""
        if not self.errors:
            return np.zeros(self.history[-1].shape, dtype=int)
        # ties go to the first predictor in PREDICTORS order (argmin's first minimum)
        return np.argmin(self._scores(), axis=0)

    def forecast(self) -> np.ndarray:
        """The next value of every series, each from its current best predictor."""
        if not self.history:
            raise ValueError("no measurements yet")
        preds = self._predictions()
        best = self.winners()
        return np.take_along_axis(preds, best[None], axis=0)[0]

    def winner_counts(self) -> dict[str, int]:
        """How many series each predictor currently wins (for reports)."""
        best = self.winners().ravel()
        return {self.names[k]: int(np.sum(best == k)) for k in sorted(set(best.tolist()))}

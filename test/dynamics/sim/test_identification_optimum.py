"""The servo fit's result at its optimum (snake_dynamics/sim/identification.py, eq. 209): the
RMS error it reports is the one a fresh prediction with the fitted servo gives, to the last
bit, though it is taken from the residuals the optimiser already computed there; and an
optimum whose prediction failed is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from snake_dynamics.errors import IdentificationError
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import NOMINAL, ServoParams
from snake_dynamics.sim.identification import (
    Excitation,
    Recording,
    fit_servo,
    optimum_rms,
    predict,
    rms_error,
)
from snake_ros.paths import robot_config


def _steps(model: SnakeModel) -> Recording:
    """The experiment's first 2.4 s (three small steps and a larger one), every 20 ms, as a
    servo other than the nominal one moves the model, with a pot offset per joint and a
    seeded noise of 0.3 mrad, so that the optimum's residuals are not zero."""
    exp = Excitation.within(model.joint_limits[:, 0], model.joint_limits[:, 1])
    t = 0.0073 + np.arange(0.0, 2.4, 0.02)
    reference = np.array([exp.evaluate(x - 0.0073).q for x in t])
    rec = Recording(t, reference, np.zeros_like(reference), tuple(model.joint_names))
    true = ServoParams(0.024, 0.005, 8.0, 0.4, 0.8, 6.0)
    noise = np.random.default_rng(3).normal(0.0, 3e-4, reference.shape)
    measured = predict(model, true, rec) + np.linspace(-0.01, 0.01, model.n_joints) + noise
    return Recording(t, reference, measured, tuple(model.joint_names))


def test_the_fit_s_rms_is_a_fresh_prediction_s_to_the_last_bit() -> None:
    model = SnakeModel.from_yaml(robot_config("robot_feedback"))
    rec = _steps(model)
    fit = fit_servo(model, rec, NOMINAL)
    fresh = rms_error(predict(model, fit.params, rec), rec.measured)
    assert np.array_equal(fit.rms, fresh)
    assert np.all(fit.rms > 1e-4)  # the noise is left: not the all-zero case
    # counted as before: the optimum's residuals are the last accepted prediction's
    assert fit.evaluations >= 7  # at least a prediction and one Jacobian of six


def test_an_optimum_whose_prediction_failed_is_refused_in_one_line() -> None:
    filled = np.ones(12)  # the fit's residuals where a prediction failed
    with pytest.raises(IdentificationError, match="stayed finite") as raised:
        optimum_rms(filled, (4, 3))
    assert "\n" not in str(raised.value)
    got = optimum_rms(np.arange(12.0) - 5.5, (4, 3))
    assert got == pytest.approx(np.sqrt(np.mean((np.arange(12.0) - 5.5).reshape(4, 3) ** 2, 0)))

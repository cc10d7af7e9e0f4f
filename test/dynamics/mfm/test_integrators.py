"""The paper's validation loop (MFM "Validate the equation of motion") and energy.

Quintic joint trajectories -> inverse dynamics torques -> RK4 forward dynamics must give
the trajectories back; with tau = 0 the mechanical energy must stay constant.
"""

from __future__ import annotations

import numpy as np
from support.models import random_model

import snake_dynamics as sd
from snake_dynamics.mfm import integrators


def test_quintic_trajectories_are_reproduced_by_rk4_within_1e_6_rad() -> None:
    model = sd.SnakeModel.from_yaml("config/snake20.yaml")
    # staggered starts k * 50 ms: every kink falls on a 1 ms step boundary
    gait = sd.staggered_quintic(20, amplitude=0.5, duration=1.0, stagger=0.05)
    result = integrators.simulate_gait(model, gait, 2.0, 0.001)
    commanded = np.array([gait(float(t)).q for t in result.t])
    assert np.max(np.abs(result.q - commanded)) < 1e-6
    # and the motion is real: every joint travelled its 0.5 rad
    np.testing.assert_allclose(np.abs(result.q[-1]), 0.5, atol=1e-6)


def test_quintic_validation_on_a_non_uniform_snake() -> None:
    model = random_model(np.random.default_rng(7), 8, gravity=False)
    gait = sd.staggered_quintic(8, amplitude=0.4, duration=0.5, stagger=0.1)
    result = integrators.simulate_gait(model, gait, 1.5, 0.001)
    commanded = np.array([gait(float(t)).q for t in result.t])
    assert np.max(np.abs(result.q - commanded)) < 1e-6


def test_quintic_validation_under_gravity_with_servo_feedback() -> None:
    # Holding a pose against gravity with feed-forward torques alone is unstable (the
    # inverted-pendulum modes grow); the servos' feedback keeps the replay on track.
    model = random_model(np.random.default_rng(7), 8, gravity=True)
    gait = sd.staggered_quintic(8, amplitude=0.4, duration=0.5, stagger=0.1)
    result = integrators.simulate_gait(model, gait, 1.5, 0.001, stiffness=5.0, damping=0.1)
    commanded = np.array([gait(float(t)).q for t in result.t])
    assert np.max(np.abs(result.q - commanded)) < 1e-6


def test_energy_is_conserved_with_zero_torque() -> None:
    model = sd.SnakeModel.from_yaml("config/snake20.yaml")
    rng = np.random.default_rng(3)
    q0 = rng.uniform(-0.5, 0.5, 20)
    qd0 = rng.uniform(-0.5, 0.5, 20)
    result = integrators.simulate(model, q0, qd0, None, 10.0, 0.001)
    drift = np.max(np.abs(result.energy - result.energy[0])) / result.energy[0]
    assert drift < 1e-5
    assert np.ptp(result.q) > 0.1  # it did move


def test_energy_is_conserved_under_gravity() -> None:
    model = random_model(np.random.default_rng(11), 6, gravity=True)
    result = integrators.simulate(model, np.zeros(6), np.full(6, 0.3), None, 2.0, 0.001)
    scale = np.max(np.abs(result.kinetic)) + np.max(np.abs(result.potential))
    assert np.max(np.abs(result.energy - result.energy[0])) < 1e-6 * scale


def test_a_diverging_run_raises_instead_of_returning_nans() -> None:
    model = sd.SnakeModel.from_yaml("config/robot.yaml")
    with np.testing.assert_raises_regex(sd.SimulationError, "left the finite numbers at t = "):
        integrators.simulate(
            model, np.zeros(8), np.zeros(8), lambda t: np.full(8, 1e306), 0.01, 0.001
        )


def test_a_bad_torque_sample_is_named_with_its_stage_time() -> None:
    model = sd.SnakeModel.from_yaml("config/robot.yaml")

    def nan_at(t: float) -> np.ndarray:
        return np.full(8, np.nan if abs(t - 0.0015) < 1e-12 else 0.0)

    with np.testing.assert_raises_regex(sd.StateError, r"tau_fn\(0\.0015\) must be finite"):
        integrators.simulate(model, np.zeros(8), np.zeros(8), nan_at, 0.01, 0.001)
    with np.testing.assert_raises_regex(sd.StateError, r"tau_fn\(0\.003\) must have shape \(8,\)"):
        integrators.simulate(
            model, np.zeros(8), np.zeros(8), lambda t: np.zeros(7 if t >= 0.003 else 8), 0.01, 0.001
        )
    gait = sd.gaits.make_gait("serpenoid", model)
    servo = integrators.Servo(1.0, 0.1, lambda t: (gait(t)[0][:7], gait(t)[1], gait(t)[2]))
    with np.testing.assert_raises_regex(sd.StateError, r"reference q\(0\) must have shape"):
        integrators.simulate(model, np.zeros(8), np.zeros(8), None, 0.01, 0.001, servo=servo)

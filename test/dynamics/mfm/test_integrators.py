"""The paper's validation loop (MFM "Validate the equation of motion") and energy.

Quintic joint trajectories -> inverse dynamics torques -> RK4 forward dynamics must give
the trajectories back; with tau = 0 the mechanical energy must stay constant.
"""

from __future__ import annotations

import numpy as np
from support.models import random_model

import snake_dynamics as sd
from snake_dynamics.mfm import integrators, recursive


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


def test_a_torque_table_at_the_stage_times_gives_the_functions_run() -> None:
    # The table is the function's own samples at stage_times: the same inputs, the same run.
    model = sd.SnakeModel.from_yaml("config/robot.yaml")
    torque = np.linspace(-0.05, 0.05, 8)

    def tau(t: float) -> np.ndarray:
        return torque * np.sin(7.0 * t)

    stages = integrators.stage_times(0.5, 0.001)
    assert stages.shape == (1001,) and stages[1] == 0.0005 and stages[-1] == 0.5
    table = np.array([tau(t) for t in stages.tolist()])
    by_function = integrators.simulate(model, np.zeros(8), np.zeros(8), tau, 0.5, 0.001)
    by_table = integrators.simulate(model, np.zeros(8), np.zeros(8), table, 0.5, 0.001)
    for name in ("q", "qd", "qdd", "tau", "kinetic", "potential"):
        np.testing.assert_array_equal(getattr(by_table, name), getattr(by_function, name))
    assert np.ptp(by_table.q) > 1e-3  # the input moved the snake


def test_a_bad_torque_table_is_one_line_with_the_shape_or_stage_time() -> None:
    model = sd.SnakeModel.from_yaml("config/robot.yaml")
    zero = np.zeros(8)
    with np.testing.assert_raises_regex(
        sd.StateError, r"stage_times\(t_end, dt\), shape \(21, 8\); got \(20, 8\)"
    ):
        integrators.simulate(model, zero, zero, np.zeros((20, 8)), 0.01, 0.001)
    with np.testing.assert_raises_regex(sd.StateError, r"got list"):
        integrators.simulate(model, zero, zero, [[0.0] * 8] * 21, 0.01, 0.001)  # type: ignore[arg-type]
    table = np.zeros((21, 8))
    table[3, 2] = np.inf
    with np.testing.assert_raises_regex(sd.StateError, r"tau_fn\(0\.0015\) must be finite"):
        integrators.simulate(model, zero, zero, table, 0.01, 0.001)


def test_the_prescribed_torque_table_is_the_torque_function_at_every_time() -> None:
    model = random_model(np.random.default_rng(5), 8, gravity=True)
    times = integrators.stage_times(0.2, 0.001)
    for gait in (
        sd.gaits.make_gait("serpenoid", model),  # sampled in one call
        sd.staggered_quintic(8, amplitude=0.4, duration=0.1, stagger=0.01),  # one call a time
    ):
        by_time = integrators.prescribed_torques(model, gait)
        table = integrators.prescribed_torque_table(model, gait, times)
        np.testing.assert_array_equal(table, np.array([by_time(t) for t in times.tolist()]))
        assert np.max(np.abs(table)) > 1e-3
    seven = sd.gaits.make_gait("serpenoid", random_model(np.random.default_rng(5), 7))
    with np.testing.assert_raises_regex(sd.StateError, r"trajectory q\(0\) must have shape \(8,\)"):
        integrators.prescribed_torque_table(model, seven, times)


def test_the_validation_loop_of_a_periodic_gait_is_its_per_time_run() -> None:
    # simulate_gait samples a periodic gait and its torques at every stage time at once; the
    # run is the one of the torque function and the reference called once per stage time.
    model = sd.SnakeModel.from_yaml("config/robot.yaml")
    gait = sd.gaits.make_gait("serpenoid", model)

    def per_time(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return gait(t)  # not a PeriodicGait: one call per time

    start = gait(0.0)
    reference = integrators.simulate(
        model, start.q, start.qd, integrators.prescribed_torques(model, per_time), 1.0, 0.001,
        servo=integrators.Servo(2.0, 0.05, per_time),
    )  # fmt: skip
    batched = integrators.simulate_gait(model, gait, 1.0, 0.001, stiffness=2.0, damping=0.05)
    for name in ("q", "qd", "qdd", "tau"):
        np.testing.assert_array_equal(getattr(batched, name), getattr(reference, name))
    assert np.ptp(batched.q) > 0.1


def test_the_energies_from_the_first_stage_are_those_of_the_samples() -> None:
    # The fast kernel sums each sample's energies in its first RK4 stage; the reference is
    # recursive.energies of the sampled states (the same frames again), to round-off.
    model = random_model(np.random.default_rng(13), 8, gravity=True)
    rng = np.random.default_rng(4)
    result = integrators.simulate(
        model, rng.uniform(-0.5, 0.5, 8), rng.uniform(-1, 1, 8), None, 0.3, 0.001
    )
    again = recursive.energies(model, result.q, result.qd)
    scale = np.max(np.abs(again))
    np.testing.assert_allclose(result.kinetic, again[:, 0], rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(result.potential, again[:, 1], rtol=0, atol=1e-13 * scale)
    assert np.ptp(result.kinetic) > 1e-3 * scale  # the energy moved between K and V

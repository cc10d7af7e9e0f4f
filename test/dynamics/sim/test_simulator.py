"""The incremental simulator behind dynamics_node and the gait player behind gait_node.

References: :func:`snake_dynamics.simulate` / :func:`simulate_gait` (the offline loop the
paper validates), and the gaits' analytic derivatives.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from snake_dynamics import SimulationError, SnakeModel, StateError, make_gait
from snake_dynamics.gaits import Gait, GaitPlayer
from snake_dynamics.mfm.integrators import simulate, simulate_gait
from snake_dynamics.mfm.recursive import FastModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import simulator as simulator_module
from snake_dynamics.sim.simulator import (
    CommandReference,
    InputSource,
    MotionInput,
    PrescribedInput,
    Simulator,
    TorqueInput,
    joint_command,
)

ROOT = Path(__file__).resolve().parents[3]
KP, KD = 2.0, 0.05  # the dynamics node's default servo gains [N m/rad], [N m s/rad]


@pytest.fixture(scope="module")
def robot() -> SnakeModel:
    return SnakeModel.from_yaml(ROOT / "config" / "robot.yaml")


class ExactGait(InputSource):
    """Inputs from the gait itself at the stage times: what simulate_gait feeds RK4."""

    def __init__(self, model: SnakeModel, gait: Gait) -> None:
        self.fast = FastModel(model)
        self.gait = gait

    def inputs(self, t: np.ndarray) -> np.ndarray:
        rows = []
        for tj in t:
            q, qd, qdd = self.gait(float(tj))
            rows.append(np.concatenate([self.fast.inverse_dynamics(q, qd, qdd), q, qd]))
        return np.array(rows)


@pytest.mark.parametrize("config", ["robot.yaml", "snake20.yaml"])
def test_batches_of_steps_match_simulate_step_for_step(config: str) -> None:
    model = SnakeModel.from_yaml(ROOT / "config" / config)
    gait = make_gait("sidewinding", model, frequency=1.0)
    dt, t_end = 1e-3, 0.3
    ref = simulate_gait(model, gait, t_end, dt, stiffness=KP, damping=KD)
    sim = Simulator(model, dt, stiffness=KP, damping=KD)
    sim.reset(0.0, gait(0.0).q, gait(0.0).qd)
    source = ExactGait(model, gait)
    done = 0
    for batch in [1, 7, 10, 13, 2, 50, 117, 100]:  # uneven batches, 300 steps in all
        sim.advance(batch, source)
        done += batch
        # Same kernel, same inputs up to the rounding of the stage times (~1e-16 s).
        np.testing.assert_allclose(sim.q, ref.q[done], rtol=0, atol=1e-11)
        np.testing.assert_allclose(sim.qd, ref.qd[done], rtol=0, atol=1e-9)
        np.testing.assert_allclose(sim.tau, ref.tau[done], rtol=0, atol=1e-9)
    assert sim.time == pytest.approx(t_end, abs=1e-12)


def test_reference_between_100_hz_commands_is_within_the_hermite_bound(robot) -> None:
    gait = make_gait("serpenoid", robot, amplitude=1.0, frequency=2.0)
    h = 0.01  # command period [s]
    ref = CommandReference(np.zeros(robot.n_joints), timeout=0.6)
    for k in range(101):
        ref.push(k * h, gait(k * h).q, gait(k * h).qd)
    t = np.linspace(0.5, 0.995, 977)  # between the samples, inside the kept window
    got = ref.evaluate(t)
    exact = [np.array([gait(float(tk))[i] for tk in t]) for i in range(3)]
    d4 = 1.0 * (2 * math.pi * 2.0) ** 4  # max |d4q/dt4| = A w^4 [rad/s^4]
    # Cubic Hermite: |q error| <= h^4 |d4q| / 384, |q_ddot error| <= h^2 |d4q| / 12
    assert np.max(np.abs(got.q - exact[0])) <= d4 * h**4 / 384
    assert np.max(np.abs(got.qd - exact[1])) <= d4 * h**3 / 72
    assert np.max(np.abs(got.qdd - exact[2])) <= d4 * h**2 / 12
    assert np.max(np.abs(got.qdd - exact[2])) > 1e-3 * d4 * h**2 / 12  # it interpolates
    assert not ref.push(0.5, gait(0.5).q, gait(0.5).qd)  # older than the newest: ignored


@pytest.mark.parametrize(("history", "kept"), [(None, False), (2.0, True)])
def test_the_history_keeps_the_commands_a_lagging_simulation_is_at(
    robot, history: float | None, kept: bool
) -> None:
    """1.5 s of 100 Hz commands, evaluated 1 s behind the newest (a starved dynamics_node
    catching up): with a history of 2 s the interpolant there is the gait; with the default
    (the 0.5 s timeout) those samples are gone and the reference is the oldest kept one."""
    gait = make_gait("serpenoid", robot)
    ref = CommandReference(np.zeros(robot.n_joints), timeout=0.5, history=history)
    for k in range(151):
        ref.push(k * 0.01, gait(k * 0.01).q, gait(k * 0.01).qd)
    assert ref.newest == pytest.approx(1.5)
    got = ref.evaluate(np.array([0.505])).q[0]
    error = float(np.max(np.abs(got - gait(0.505).q)))
    assert (error < 1e-4) == kept, error


def test_a_long_stream_of_commands_keeps_exactly_its_history(robot) -> None:
    """3000 commands with uneven gaps (the buffer compacts and grows many times): the
    reference equals one built from the samples the history keeps, the newest old one
    included; and per-joint delays evaluate each joint at its own time."""
    n = robot.n_joints
    rng = np.random.default_rng(7)
    times = np.cumsum(rng.uniform(0.002, 0.03, 3000))
    qs, qds = rng.normal(size=(3000, n)), rng.normal(size=(3000, n))
    ref = CommandReference(np.zeros(n), timeout=0.5, history=1.0)
    for k in range(3000):
        assert ref.push(times[k], qs[k], qds[k])
        if k % 997 == 0 or k == 2999:
            kept = np.flatnonzero(times[: k + 1] >= times[k] - 1.0)
            first = min(kept[0], k)  # the newest sample always stays
            fresh = CommandReference(np.zeros(n), timeout=0.5, history=100.0)
            for j in range(first, k + 1):
                fresh.push(times[j], qs[j], qds[j])
            t = np.linspace(times[k] - 1.5, times[k] + 0.6, 301)
            for got, want in zip(ref.evaluate(t), fresh.evaluate(t), strict=True):
                np.testing.assert_array_equal(got, want)
    delays = np.linspace(0.0, 0.07, n)
    t = np.linspace(times[-1] - 0.5, times[-1], 51)
    together = ref.evaluate(t, delays)
    for c in range(n):
        alone = ref.evaluate(t - delays[c])
        for got, want in zip(together, alone, strict=True):
            np.testing.assert_array_equal(got[:, c], want[:, c])


def test_the_reference_at_times_in_any_order_is_the_reference_at_each_time_alone(robot) -> None:
    """The evaluation follows each joint's sample interval forward along increasing times
    and searches again where they go back or start before the first sample. Reference: the
    same reference at each time alone (one search each), bit for bit, at sorted, reversed
    and shuffled times around and beyond the samples; and the angle-only inputs of a
    hobby servo (no feed-forward) equal the evaluation's angles with zero torques and rates,
    before a command the held pose."""
    n = robot.n_joints
    rng = np.random.default_rng(3)
    ref = CommandReference(np.zeros(n), timeout=0.05)
    for k in range(20):
        ref.push(0.01 * k, rng.normal(size=n), rng.normal(size=n))
    delays = np.linspace(0.0, 0.03, n)
    ordered = np.linspace(-0.02, 0.3, 97)
    for t in (ordered, ordered[::-1].copy(), rng.permutation(ordered)):
        together = ref.evaluate(t, delays)
        alone = [ref.evaluate(t[j : j + 1], delays) for j in range(t.size)]
        for i, got in enumerate(together):
            np.testing.assert_array_equal(got, np.vstack([a[i] for a in alone]))
        source = PrescribedInput(FastModel(robot), ref, delays, feed_forward=False)
        inputs = source.inputs(t)
        np.testing.assert_array_equal(inputs[:, n : 2 * n], together[0])
        assert not inputs[:, :n].any() and not inputs[:, 2 * n :].any()
    held = CommandReference(np.full(n, 0.2), timeout=0.05)  # no command yet: the rest pose
    inputs = PrescribedInput(FastModel(robot), held, delays, feed_forward=False).inputs(ordered)
    np.testing.assert_array_equal(inputs[:, n : 2 * n], np.full((ordered.size, n), 0.2))


def test_the_servos_inputs_need_no_compilation_after_the_warm_up(robot) -> None:
    """dynamics_node's first tick after its first command: the per-joint dead times (a
    read-only view of the servo file's, before) once made numba compile the interpolation
    anew there, 0.6 s that a fresh clone's node skipped."""
    servo = ServoModel.from_yaml(ROOT / "config" / "robot.yaml", robot.joint_names)
    sim = Simulator(robot, 0.001, servo=servo)
    sim.warm_up()
    compiled = len(simulator_module._hermite.signatures)
    reference = CommandReference(np.zeros(robot.n_joints), timeout=0.5)
    source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward=False)
    for k in range(3):
        reference.push(0.01 * k, np.full(robot.n_joints, 0.1), np.zeros(robot.n_joints))
    sim.advance(10, source)
    assert len(simulator_module._hermite.signatures) == compiled


@pytest.mark.parametrize("name", ["serpenoid", "sidewinding", "rolling"])
def test_motion_input_samples_a_periodic_gait_as_one_call_per_time(robot, name: str) -> None:
    """Reference: the gait evaluated at each stage time, one call each, less each dead
    time (what MotionInput did before it evaluated a PeriodicGait at every time at once):
    equal bit for bit, two groups of dead times, with and without the rate reference."""
    gait = make_gait(name, robot)
    n = robot.n_joints
    dead = np.where(np.arange(n) % 2, 0.03, 0.0)
    times = 0.123 + 0.00025 * np.arange(401)
    for rates in (False, True):
        got = MotionInput(gait, dead, rates).inputs(times)
        want = np.zeros((times.size, 3 * n))
        for row, t in enumerate(times):
            for k in range(n):
                late = gait(float(t) - dead[k])
                want[row, n + k] = late.q[k]
                if rates:
                    want[row, 2 * n + k] = late.qd[k]
        assert np.array_equal(got, want)


def test_stale_commands_hold_the_last_position_at_rest(robot) -> None:
    ref = CommandReference(np.full(robot.n_joints, 0.1), timeout=0.05)
    held = ref.evaluate(np.array([0.0, 1.0]))
    np.testing.assert_array_equal(held.q, 0.1)
    np.testing.assert_array_equal(held.qd, 0.0)
    ref.push(1.0, np.full(robot.n_joints, 0.2), np.full(robot.n_joints, 1.0))
    out = ref.evaluate(np.array([1.02, 1.2]))
    np.testing.assert_allclose(out.q[0], 0.2 + 0.02)  # constant velocity while live
    np.testing.assert_array_equal(out.q[1], 0.2)  # stale: held at rest
    np.testing.assert_array_equal(out.qd[1], 0.0)


def test_latest_is_the_newest_command_and_hold_starts_there(robot) -> None:
    """What dynamics_node restarts a diverged simulation from: the newest command, at rest."""
    n = robot.n_joints
    ref = CommandReference(np.full(n, 0.1), timeout=0.5)
    np.testing.assert_array_equal(ref.latest, 0.1)  # before any command: the rest pose
    ref.push(1.0, np.full(n, 0.2), np.zeros(n))
    ref.push(1.01, np.full(n, 0.3), np.full(n, 5.0))
    np.testing.assert_array_equal(ref.latest, 0.3)
    ref.hold(ref.latest)
    out = ref.evaluate(np.array([1.0, 1.005, 2.0]))
    np.testing.assert_array_equal(out.q, 0.3)  # the interpolation is forgotten
    np.testing.assert_array_equal(out.qd, 0.0)


@pytest.mark.parametrize(
    ("config", "gait_name", "delay", "tolerance"),
    [
        ("robot.yaml", "serpenoid", 0.02, 1e-6),
        ("snake20.yaml", "sidewinding", 0.02, 1e-6),
        # Extrapolating past the newest command instead (no delay) makes the feed-forward
        # wrong by about M* h |q'''|: the long snake's prediction drifts by > 0.1 rad.
        ("snake20.yaml", "sidewinding", 0.0, -0.1),
    ],
)
def test_the_node_pipeline_follows_the_offline_simulation(
    config: str, gait_name: str, delay: float, tolerance: float
) -> None:
    """Commands sampled at 100 Hz, RK4 at 1 kHz run to `delay` behind the newest command
    on every 10 ms tick (the dynamics node's loop), against simulate_gait with the same gait.
    """
    model = SnakeModel.from_yaml(ROOT / "config" / config)
    gait = make_gait(gait_name, model)
    dt, h = 1e-3, 0.01
    offline = simulate_gait(model, gait, 2.0, dt, stiffness=KP, damping=KD)
    sim = Simulator(model, dt, stiffness=KP, damping=KD)
    sim.reset(0.0, gait(0.0).q, gait(0.0).qd)
    ref = CommandReference(gait(0.0).q, timeout=0.5)
    ref.push(-h, gait(-h).q, gait(-h).qd)
    source = PrescribedInput(FastModel(model), ref)
    worst = 0.0
    for tick in range(200):
        ref.push(tick * h, gait(tick * h).q, gait(tick * h).qd)
        report = sim.run_until(tick * h - delay, source, max_steps=100)
        assert report.skipped == 0.0
        worst = max(worst, float(np.max(np.abs(sim.q - offline.q[round(sim.time / dt)]))))
    # The interpolated reference's q_ddot is off by <= h^2 |d4q| / 12 (1e-4 of its amplitude
    # here) and so are the feed-forward torques; the angles stay within 1e-6 rad (measured:
    # 2e-8 rad for the 8-joint snake, 1e-7 rad for the 20-body one).
    if tolerance > 0:
        assert worst < tolerance
    else:
        assert worst > -tolerance


def test_torque_mode_matches_simulate_with_the_same_torques(robot) -> None:
    tau = np.linspace(-0.02, 0.02, robot.n_joints)
    ref = simulate(
        robot, np.zeros(robot.n_joints), np.zeros(robot.n_joints), lambda t: tau, 0.2, 1e-3
    )
    sim = Simulator(robot, 1e-3)
    source = TorqueInput(robot.n_joints, timeout=1.0)
    source.push(0.0, tau)
    sim.run_until(0.2, source, max_steps=1000)
    np.testing.assert_allclose(sim.q, ref.q[-1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(sim.tau, tau)
    source.push(-10.0, tau)  # stale torques are dropped to zero
    assert np.all(source.inputs(np.array([0.3])) == 0.0)


def test_run_until_skips_time_it_cannot_catch_up_and_stays_aligned(robot) -> None:
    sim = Simulator(robot, 1e-3)
    source = TorqueInput(robot.n_joints, timeout=1.0)
    report = sim.run_until(0.0505, source, max_steps=20)
    assert report.steps == 20 and report.skipped == pytest.approx(0.030)
    assert sim.time == pytest.approx(0.050)
    assert sim.run_until(0.049, source, max_steps=20).steps == 0  # never runs backwards


def test_a_diverging_state_raises_and_keeps_the_last_finite_state(robot) -> None:
    sim = Simulator(robot, 1e-3)
    source = TorqueInput(robot.n_joints, timeout=1.0)
    source.push(0.0, np.full(robot.n_joints, 1e306))
    with pytest.raises(SimulationError, match="finite"):
        sim.advance(5, source)
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.qd))
    assert sim.time < 5e-3  # it stopped at the last finite state
    sim.reset(sim.time, np.zeros(robot.n_joints), np.zeros(robot.n_joints))
    sim.advance(5, TorqueInput(robot.n_joints, timeout=1.0))  # and goes on after a reset
    assert np.all(sim.q == 0.0)


def test_joint_command_reorders_and_rejects_bad_commands() -> None:
    names = ["joint_1", "joint_2", "joint_3"]
    q, qd = joint_command(names, ["joint_3", "joint_1", "joint_2"], [3.0, 1.0, 2.0], [])
    np.testing.assert_array_equal(q, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(qd, [0.0, 0.0, 0.0])
    with pytest.raises(StateError, match=r"unknown \['joint_9'\]"):
        joint_command(names, ["joint_1", "joint_2", "joint_9"], [0, 0, 0])
    with pytest.raises(StateError, match="3 positions"):
        joint_command(names, names, [0, 0])
    with pytest.raises(StateError, match="velocities"):
        joint_command(names, names, [0, 0, 0], [1.0])
    with pytest.raises(StateError, match="finite"):
        joint_command(names, names, [0, math.nan, 0])
    with pytest.raises(StateError, match="finite"):
        joint_command(names, names, [0, 0, 0], [0, math.inf, 0])


def test_gait_player_ramps_in_switches_smoothly_and_ramps_out(robot) -> None:
    slow = make_gait("serpenoid", robot, amplitude=0.5)
    wide = make_gait("serpenoid", robot, amplitude=1.0)
    player = GaitPlayer(slow, transition_time=1.0, ramp_time=2.0)
    assert np.all(player.evaluate(0.0).q == 0.0)  # rest until started
    assert player.start(1.0) and not player.start(1.5)
    start = player.evaluate(1.0)
    assert np.all(start.q == 0.0) and np.all(start.qd == 0.0) and np.all(start.qdd == 0.0)
    np.testing.assert_allclose(player.evaluate(3.5).q, slow(3.5).q, atol=1e-15)
    player.set_gait(4.0, wide)
    t = np.arange(4.0, 5.0 + 1e-9, 0.01)
    q = np.array([player.evaluate(float(tk)).q for tk in t])
    omega = 2 * math.pi * 0.5
    # Quintic blend: |q_dot| <= max(|v_a|, |v_b|) + 1.875 |q_b - q_a| / T.
    bound = (1.0 * omega + 1.875 * 0.5 / 1.0) * 0.01
    assert np.max(np.abs(np.diff(q, axis=0))) <= bound
    assert np.max(np.abs(wide(4.0).q - slow(4.0).q)) > 2 * bound  # a switch would jump
    np.testing.assert_allclose(player.evaluate(5.2).q, wide(5.2).q, atol=1e-15)
    assert player.stop(6.0) and not player.stop(6.5)
    assert np.all(player.evaluate(8.0).q == 0.0) and np.all(player.evaluate(9.0).qd == 0.0)


def test_warm_up_compiles_everything_the_dynamics_node_runs_to_its_first_messages() -> None:
    """After the Makefile's warm-up, a dynamics node start compiles nothing: no numba
    dispatcher gains a signature through Simulator.warm_up and the first ticks (what would
    otherwise be compiled, seconds each, is loaded from numba's cache)."""
    from numba.core.registry import CPUDispatcher

    from snake_dynamics.mfm import recursive, spatial
    from snake_dynamics.sim import simulator

    def compiled() -> dict[str, int]:
        return {
            f"{m.__name__}.{name}": len(d.signatures)
            for m in (recursive, spatial, simulator)
            for name, d in vars(m).items()
            if isinstance(d, CPUDispatcher)
        }

    simulator.warm_up()
    before = compiled()
    model = SnakeModel.uniform(8, 0.09, 0.075, 0.03)
    sim = Simulator(model, 1e-3, stiffness=KP, damping=KD)
    reference = CommandReference(np.zeros(8), 0.5)
    source = PrescribedInput(sim.fast_model, reference)
    sim.warm_up()
    sim.run_until(-0.02, source, 100)
    assert np.all(np.isfinite(sim.tau))
    reference.push(0.0, np.zeros(8), np.zeros(8))
    sim.run_until(0.01, source, 100)
    assert compiled() == before

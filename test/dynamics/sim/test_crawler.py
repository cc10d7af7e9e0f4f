"""Servos on a free body (docs/mfm.md eqs. 240-242): the compiled rate against the literal
floating base under the servo torques and the ground; stiff, fast servos converging to the
prescribed-joint run, first order in 1/K; the power balance closing at RK4's order; the
pitch servos' torques at rest against the gravity torques computed by hand."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.integrate import simpson

from snake_dynamics.errors import ModelError, SimulationError
from snake_dynamics.floating import (
    FastFloatingModel,
    FloatingState,
    lying_state,
    on_the_ground,
    rest_state,
    simulate_prescribed_fast,
    world_poses,
)
from snake_dynamics.floating.literal import (
    body_velocities,
    floating_energy,
    floating_force_list,
    floating_forward_dynamics,
    ground_force_list,
)
from snake_dynamics.gaits import make_gait
from snake_dynamics.ground import Ground, contact_points, stable_step
from snake_dynamics.mfm.recursive import servo_torque
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import NOMINAL, ServoModel
from snake_dynamics.sim import crawler as crawler_module
from snake_dynamics.sim.crawler import (
    BASE,
    CrawlingSimulator,
    crawl_rate,
    crawling_reach,
    crawling_substeps,
    simulate_crawling,
)
from snake_dynamics.sim.simulator import InputSource, MotionInput, servo_reach, stable_substeps

FloatArray = NDArray[np.float64]
GRAVITY = (0.0, 0.0, -9.81)
RNG = np.random.default_rng(240)
CONFIG = Path(__file__).resolve().parents[3] / "config"
#: RK4's stability limit on the negative real axis: R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24
#: has |R| = 1 at z = -2.7853.
RK4_REAL_LIMIT = 2.7853


def crawler(n: int, axes: str, ground: Ground | None = None) -> SnakeModel:
    """A small uniform snake on the ground (100 g, 10 cm, 2 cm radius bodies)."""
    return SnakeModel.uniform(
        n, 0.1, 0.1, 0.02, axes=axes, gravity=GRAVITY, base="floating", ground=ground or Ground()
    )


class Hold(InputSource):
    """Constant angle targets [rad]."""

    def __init__(self, q: list[float]) -> None:
        self.q = np.array(q)

    def inputs(self, t: FloatArray) -> FloatArray:
        n = self.q.size
        out = np.zeros((t.size, 3 * n))
        out[:, n : 2 * n] = self.q
        return out


def test_compiled_rate_is_the_literal_floating_base_under_servos_and_ground() -> None:
    model = crawler(5, "xz")
    servo = ServoModel.uniform(NOMINAL, 5)
    fm = FastFloatingModel(model)
    for _ in range(5):
        state = lying_state(model)
        q, qd = RNG.normal(0.0, 0.3, 5), RNG.normal(0.0, 1.0, 5)
        base = RNG.normal(0.0, 0.2, 6)
        position = state.position + np.array([0.1, -0.2, -0.004])  # pressed into the ground
        quaternion = np.array([0.02, -0.03, 0.3, 1.0]) / np.linalg.norm([0.02, -0.03, 0.3, 1.0])
        s = FloatingState(position, quaternion, q, np.concatenate([base, qd]))
        u = np.concatenate([RNG.normal(0, 0.1, 5), RNG.normal(0, 0.5, 5), RNG.normal(0, 1, 5)])
        y = np.concatenate([position, quaternion, base, q, qd])
        rate, tau = crawl_rate(fm.params, fm.ground, servo.packed, y, u)
        expected_tau = servo_torque(servo.packed, u, q, qd)
        wrenches = ground_force_list(model, model.ground, s)
        nu_dot = floating_forward_dynamics(model, s.rotation, q, s.nu, expected_tau, wrenches)
        np.testing.assert_allclose(tau, expected_tau, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(rate[7:BASE], nu_dot[:6], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rate[BASE + 5 :], nu_dot[6:], rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(rate[BASE : BASE + 5], qd, rtol=0, atol=0)
        np.testing.assert_allclose(rate[:3], s.rotation @ base[:3], rtol=1e-12, atol=1e-15)
        assert np.linalg.norm(rate[BASE + 5 :]) > 1.0  # the wrenches and torques matter
        assert np.any(floating_force_list(model, expected_tau, wrenches))


def test_stiff_fast_servos_converge_to_prescribed_joints_first_order_in_one_over_k() -> None:
    model = crawler(4, "z")
    gait = make_gait("serpenoid", model)
    t_end, dt = 2.0, 0.0005
    exact = simulate_prescribed_fast(model, gait, t_end, dt, lying_state(model), 100)
    errors = []
    for stiffness in (25.0, 100.0, 400.0, 1600.0):
        servo = ServoModel.pd(stiffness, 0.01 * math.sqrt(stiffness), 4)  # damping ratio kept
        run = simulate_crawling(
            model,
            gait,
            t_end,
            dt,
            servo,
            every=100,
            source=MotionInput(gait, np.zeros(4), rates=True),
        )
        errors.append(float(np.abs(run.position - exact.position).max()))
        np.testing.assert_allclose(run.t, exact.t)
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    # each 4x stiffer servo leaves a 4x smaller error: first order in 1/K
    np.testing.assert_allclose(ratios, 4.0, rtol=0.1)
    travel = float(np.linalg.norm(exact.position[-1, :2] - exact.position[0, :2]))
    assert errors[-1] < 1e-3 * travel < errors[0]


def test_power_balance_closes_at_rk4_order() -> None:
    # always in contact (yaw joints, pressed to the springs' rest): a smooth right-hand side
    ground = Ground(stiffness=2000.0, damping=4.0, velocity_scale=0.05)
    model = crawler(3, "z", ground)
    sink = 0.1 * 9.81 / (ground.contacts * ground.stiffness)
    start = rest_state(model, (0.0, 0.0, 0.02 - sink))
    gait = make_gait("serpenoid", model)
    servo = ServoModel.pd(5.0, 0.05, 3)
    residuals = []
    for dt in (0.001, 0.0005):
        run = simulate_crawling(model, gait, 0.5, dt, servo, start=start)
        energy, power, gross = [], [], 0.0
        for i in range(run.t.size):
            s = FloatingState(run.position[i], run.quaternion[i], run.q[i], run.nu[i])
            energy.append(floating_energy(model, s))  # kinetic + gravity's potential
            wrench = ground_force_list(model, ground, s)
            ground_power = float(np.sum(wrench * body_velocities(model, s.rotation, s.q, s.nu)))
            servo_power = float(run.tau[i] @ run.nu[i, 6:])
            power.append(servo_power + ground_power)
            gross += (abs(servo_power) + abs(ground_power)) * dt
        work = simpson(power, x=run.t)
        residuals.append(abs(energy[-1] - energy[0] - work))
        assert residuals[-1] < 1e-4 * gross
    assert residuals[0] / residuals[1] > 8.0  # RK4 and Simpson: fourth order, at least third


def test_pitch_servos_at_rest_carry_the_gravity_torques_computed_by_hand() -> None:
    model = crawler(2, "xz")  # joint 1 pitch (e1), joint 2 yaw
    model = dataclasses.replace(model, masses=np.array([1.0, 0.1, 0.1]))  # a heavy tail
    sim = CrawlingSimulator(model, 0.001, servo=ServoModel.pd(20.0, 0.5, 2))
    sim.advance(3000, Hold([0.4, 0.0]))  # lift the two front bodies, then settle
    state = sim.base_state
    rotations, _ = world_poses(model, state)
    elevation = math.asin(rotations[1][2, 1])  # of bodies 1 and 2 (joint 2 straight)
    m1, m2 = model.masses[1:]
    l1, l2 = model.lengths[1:]
    by_hand = 9.81 * math.cos(elevation) * (m1 * l1 / 2 + m2 * (l1 + l2 / 2))
    assert 0.3 < elevation < 0.4  # lifted: the servo's error is K⁻¹ times its torque
    np.testing.assert_allclose(sim.tau[0], by_hand, rtol=1e-6)
    assert abs(sim.tau[1]) < 1e-9
    np.testing.assert_allclose(state.nu, 0.0, atol=1e-9)  # at rest
    assert sim.tau[0] == pytest.approx(20.0 * (0.4 - state.q[0]), rel=1e-9)


def test_a_restart_to_a_bent_pose_lays_the_body_on_the_ground() -> None:
    """``resting_base``: the tail where it lay, raised so that the body bent down (pitch
    joints -0.6 and -0.7 rad) touches the ground at its lowest contact point and sinks into
    it nowhere. Held there, the servos keep the pose within 0.11 rad and the body stays on
    the floor; restarted at the tail's old height instead, the sunken bodies are thrown off
    the floor (what dynamics_node's first command did to the prediction mid-gait)."""
    model = crawler(4, "xzxz")
    q = [-0.6, 0.3, -0.7, 0.2]
    servo = ServoModel.pd(5.0, 0.1, 4)
    outcomes = []
    for laid in (True, False):
        sim = CrawlingSimulator(model, 0.001, servo=servo)
        lying = sim.base_state
        base = sim.resting_base(q) if laid else None
        sim.reset(0.0, q, np.zeros(4), base)
        rotations, centres = world_poses(model, sim.base_state)
        points = contact_points(model.lengths, model.radii, rotations, centres, 3)
        if laid:
            assert base is not None
            assert float(np.min(points[..., 2])) == pytest.approx(0.0, abs=1e-12)
            np.testing.assert_array_equal(base.position[:2], lying.position[:2])
            np.testing.assert_array_equal(base.quaternion, lying.quaternion)
            np.testing.assert_array_equal(base.nu, 0.0)
        else:
            assert float(np.min(points[..., 2])) < -0.2  # sunk into the floor
        qs, _ = sim.advance(300, Hold(q))
        outcomes.append((float(np.max(np.abs(qs - np.array(q)))), sim.base_state.position[2]))
    (laid_error, laid_height), (sunk_error, sunk_height) = outcomes
    assert laid_error < 0.11 and laid_height < 0.05
    assert sunk_error > 0.5 and sunk_height > 1.0


def test_the_servos_step_count_follows_the_free_base_and_the_ground() -> None:
    model = crawler(4, "xz")
    soft = crawling_substeps(model, ServoModel.pd(1.0, 0.001, 4), 0.001)
    stiff = crawling_substeps(model, ServoModel.pd(1.0, 1.0, 4), 0.001)
    assert soft == 1 and stiff > 2  # damping on light links is what is stiff
    hard = Ground(stiffness=2e6)
    hard_floor = dataclasses.replace(model, ground=hard)
    bound = stable_step(hard, model.masses, 9.81)
    count = crawling_substeps(hard_floor, ServoModel.pd(1.0, 0.001, 4), 0.001)
    assert count == math.ceil(0.001 / bound) > 5


def test_the_step_count_s_search_runs_once_per_body_and_servo_gains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A floor fit builds a simulator for every prediction: another floor reuses the body's
    searched reaches, other servo gains or another body search again, and the counts are
    the search's."""
    calls = [0]

    def counted(model: SnakeModel, servo: ServoModel, q: FloatArray) -> float:
        calls[0] += 1
        return crawling_reach(model, servo, q)

    monkeypatch.setattr(crawler_module, "crawling_reach", counted)
    model = crawler(4, "xz", Ground(mu_along=0.3))
    servo = ServoModel.pd(1.25, 0.75, 4)  # gains no other test searches in this process
    first = crawling_substeps(model, servo, 0.001)
    searched = calls[0]
    assert searched == 65  # the straight pose and 64 bent ones
    slippery = dataclasses.replace(model, ground=Ground(mu_along=0.05))
    assert crawling_substeps(slippery, servo, 0.001) == first and calls[0] == searched
    soft = ServoModel.pd(1.25, 0.0125, 4)
    assert crawling_substeps(model, soft, 0.001) < first and calls[0] == 2 * searched
    crawling_substeps(crawler(5, "xz"), ServoModel.pd(1.25, 0.75, 5), 0.001)
    assert calls[0] == 3 * searched


@pytest.mark.parametrize("ground", [False, True], ids=["fixed-tail", "on-the-ground"])
@pytest.mark.parametrize("name", ["robot_table", "snake20"])
def test_the_servos_step_keeps_rk4_stable_at_poses_it_did_not_search(
    name: str, ground: bool
) -> None:
    """The step counts (the fixed tail's and on the ground) search 65 poses for the servos'
    fastest mode; 1000 others (another seed, the joints' whole range) stay inside RK4's
    stability interval with a margin, and the search is needed: snake20's worst pose reaches
    past its straight one by a fifth and more."""
    path = CONFIG / f"{name}.yaml"
    model = SnakeModel.from_yaml(path)
    servo = ServoModel.from_yaml(path, model.joint_names)
    if ground:
        model = on_the_ground(model)
        h = 0.001 / crawling_substeps(model, servo, 0.001)
        reach = crawling_reach
    else:
        h = 0.001 / stable_substeps(model, servo, 0.001)
        reach = servo_reach
    rng = np.random.default_rng(1)
    limits = model.joint_limits
    poses = rng.uniform(limits[:, 0], limits[:, 1], (1000, model.n_joints))
    worst = max(reach(model, servo, q) for q in poses)
    straight = reach(model, servo, np.zeros(model.n_joints))
    assert worst * h < 0.9 * RK4_REAL_LIMIT, (worst * h, h)
    assert h == pytest.approx(0.001 / 3)  # 4 for the 8 joints from the straight pose at 2.0
    if name == "snake20":
        assert worst > 1.2 * straight


def test_a_crawl_that_leaves_the_finite_numbers_stops_at_its_last_finite_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel is compiled with fastmath, where a NaN test may be dropped: the rows are
    checked outside it. Stiff servos with one RK4 step per ms blow up within a few steps."""
    model = crawler(4, "xz")
    monkeypatch.setattr(crawler_module, "crawling_substeps", lambda *_: 1)
    sim = CrawlingSimulator(model, 0.001, servo=ServoModel.pd(1.0, 1.0, 4))
    with pytest.raises(SimulationError, match="left the finite numbers at t = "):
        sim.advance(500, Hold([0.5, -0.5, 0.5, -0.5]))
    assert 0.0 < sim.time < 2.0
    assert np.all(np.isfinite(sim.y)) and np.all(np.isfinite(sim.q))


def test_batches_in_one_call_are_the_separate_calls_bit_for_bit() -> None:
    """Reference: :meth:`CrawlingSimulator.run` called once per batch (what
    simulate_crawling did, and still does for other input sources): the same end states,
    times and inputs, and the simulator left in the same state, to the last bit."""
    model = crawler(4, "xz")
    gait = make_gait("serpenoid", model)
    servo = ServoModel.pd(2.0, 0.05, 4)
    source = MotionInput(gait, np.array([0.0, 0.01, 0.0, 0.02]), rates=True)
    separate, batched = (CrawlingSimulator(model, 0.001, servo=servo, t0=0.25) for _ in "ab")
    want_y, want_t, want_tau = [], [], []
    for _ in range(6):
        want_y.append(separate.run(7, source)[-1])
        want_t.append(separate.time)
        want_tau.append(separate.tau)
    times, ys, us = batched.run_batches(6, 7, source)
    assert np.array_equal(times, want_t) and np.array_equal(ys, want_y)
    assert np.array_equal(servo_torque(servo.packed, us[-1], ys[-1, BASE : BASE + 4],
                                       ys[-1, BASE + 4 :]), want_tau[-1])  # fmt: skip
    assert np.array_equal(batched.y, separate.y) and batched.time == separate.time
    assert np.array_equal(batched.tau, separate.tau)


def test_batches_that_leave_the_finite_numbers_stop_at_the_last_finite_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As one call per batch: the error, and the state and time of the last finite step."""
    model = crawler(4, "xz")
    monkeypatch.setattr(crawler_module, "crawling_substeps", lambda *_: 1)
    source = MotionInput(lambda t: make_gait("serpenoid", model)(t), np.zeros(4))
    sims = [CrawlingSimulator(model, 0.001, servo=ServoModel.pd(1.0, 1.0, 4)) for _ in "ab"]
    with pytest.raises(SimulationError, match="left the finite numbers at t = ") as one:
        for _ in range(100):
            sims[0].run(5, source)
    with pytest.raises(SimulationError, match="left the finite numbers at t = ") as batched:
        sims[1].run_batches(100, 5, source)
    assert str(batched.value) == str(one.value)
    assert np.array_equal(sims[1].y, sims[0].y) and sims[1].time == sims[0].time
    assert 0.0 < sims[1].time < 0.5 and np.all(np.isfinite(sims[1].y))


def test_a_robot_that_does_not_crawl_is_refused_in_one_line() -> None:
    for model in (
        SnakeModel.uniform(2, 0.1, 0.1, 0.02),
        SnakeModel.uniform(2, 0.1, 0.1, 0.02, base="floating"),
    ):
        with pytest.raises(ModelError, match="base: floating and a ground"):
            CrawlingSimulator(model, 0.001, stiffness=1.0)


@pytest.mark.parametrize("width", [0.0, 0.04])
def test_a_flat_underside_rights_a_rolled_body_and_a_round_one_stays_rolled(width: float) -> None:
    """Eq. 231's box: a straight snake let go 0.3 rad rolled about its length, its servos
    holding it straight, lands on one edge of its flat undersides and tips back flat; a snake
    of cylinders rests on its lowest points whatever its roll, so it stays rolled."""
    model = crawler(4, "xzxz", Ground(width=width))
    sim = CrawlingSimulator(model, 0.001, servo=ServoModel.pd(5.0, 0.1, 4))
    lying = sim.base_state
    roll = 0.3
    rolled = lying._replace(
        position=lying.position + np.array([0.0, 0.0, 0.01]),
        quaternion=np.array([0.0, math.sin(roll / 2), 0.0, math.cos(roll / 2)]),
    )
    sim.reset(0.0, np.zeros(4), np.zeros(4), rolled)
    sim.advance(1500, Hold([0.0] * 4))
    rotation = world_poses(model, sim.base_state)[0][0]
    final = math.atan2(-rotation[2, 0], rotation[2, 2])  # about e2
    if width > 0.0:
        assert abs(final) < 0.01
    else:
        assert final == pytest.approx(roll, abs=0.05)


#: A fresh interpreter (no kernel of this test run's compiled in it): the install's warm-up,
#: then a crawl of robot_ground.yaml and a run of robot_wheels.yaml; prints how many
#: signatures the crawler's and the wheeled snake's kernels gained after the warm-up.
AFTER_WARM_UP = f"""
from numba.core.registry import CPUDispatcher
from snake_dynamics.gaits import make_gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import NOMINAL, ServoModel
from snake_dynamics.sim import crawler, engines, wheeled

def signatures():
    return {{f"{{m.__name__}}.{{name}}": len(d.signatures) for m in (crawler, wheeled)
            for name, d in vars(m).items() if isinstance(d, CPUDispatcher)}}

engines.warm_up()
before = signatures()
for simulate, robot in ((crawler.simulate_crawling, "robot_ground"),
                        (wheeled.simulate_wheeled, "robot_wheels")):
    model = SnakeModel.from_yaml("{CONFIG}/" + robot + ".yaml")
    servo = ServoModel.uniform(NOMINAL, model.n_joints)
    simulate(model, make_gait("serpenoid", model), 0.02, 0.001, servo)
print(len(before), {{k: v - before[k] for k, v in signatures().items() if v != before[k]}})
"""


@pytest.mark.slow  # a child that loads every kernel and MuJoCo: make test, not make unit
def test_the_install_s_warm_up_compiles_every_crawling_and_wheeled_kernel() -> None:
    """After `make`'s warm-up (:func:`snake_dynamics.sim.engines.warm_up`) a crawl on the
    ground and a run on wheels compile nothing: without it the first ``snake simulate
    --ground`` of a fresh clone compiled the crawler's kernels, 29 CPU s, in every process
    that started before the cache was written (test processes and sweep workers alike)."""
    out = subprocess.run(
        [sys.executable, "-c", AFTER_WARM_UP], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    counted, gained = out.stdout.split(maxsplit=1)
    assert int(counted) >= 8 and gained.strip() == "{}", out.stdout

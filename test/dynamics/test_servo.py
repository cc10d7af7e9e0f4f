"""The servo model (docs/mfm.md, eqs. 201-206) and the robot configs that carry it.

References: the closed forms of a single joint of known inertia (second-order step response,
the torque-speed line's exponential approach to the no-load speed), the cylinder inertia by
hand, the linearisation of the whole snake about the straight pose (M*(0), eq. 82) for the
prediction's lag, and the config files as written.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from snake_driver.calibration import load_servo_map
from snake_dynamics import ModelError, SimulationError, SnakeModel, link_poses, make_gait
from snake_dynamics.mfm import mass_matrix
from snake_dynamics.mfm.integrators import joint_response
from snake_dynamics.servo import NOMINAL, ServoModel, ServoParams
from snake_dynamics.sim import CommandReference, PrescribedInput, Simulator, simulator
from snake_dynamics.urdf import to_urdf

ROOT = Path(__file__).resolve().parents[2]
DT = 1e-3
#: One moving body on the fixed tail, turning about e3: J = J_zz + m (L/2)^2 about the joint.
MASS, LENGTH, RADIUS = 0.1, 0.1, 0.02
INERTIA = MASS * (3 * RADIUS**2 + LENGTH**2) / 12 + MASS * (LENGTH / 2) ** 2


def one_joint() -> SnakeModel:
    return SnakeModel(
        masses=[1.0, MASS],
        lengths=[0.1, LENGTH],
        radii=[0.02, RADIUS],
        axes=[[0.0, 0.0, 1.0]],
    )


def step_response(params: ServoParams, r: float, t_end: float) -> tuple[np.ndarray, ...]:
    """The dynamics node's pipeline (Simulator, PrescribedInput without feed-forward) on one
    joint: a step from 0 to r [rad] at t = 0. Returns t, q, q_dot, tau at every step."""
    model = one_joint()
    servo = ServoModel.uniform(params, 1)
    sim = Simulator(model, DT, servo=servo)
    reference = CommandReference(np.zeros(1), timeout=10.0 * t_end)
    reference.push(0.0, np.zeros(1), np.zeros(1))  # 0 up to t = 0 (a stage time) ...
    reference.push(1e-6, np.array([r]), np.zeros(1))  # ... r from the next stage time on
    source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward=False)
    rows = [(0.0, 0.0, 0.0, 0.0)]
    for _ in range(round(t_end / DT)):
        sim.advance(1, source)
        rows.append((sim.time, sim.q[0], sim.qd[0], sim.tau[0]))
    return tuple(np.array(rows).T)


#: A step input switches between two RK4 stage times: the step [T_d, T_d + dt] sees it at
#: the stages of weights 2/6, 2/6 and 1/6, not at the first (1/6), so the discrete response
#: is the ideal one to a step dt/6 late (to O(dt^2)).
STEP_LAG = DT / 6


def second_order(t: np.ndarray, target: float, params: ServoParams) -> np.ndarray:
    """The closed-form step response toward ``target`` (eq. 206) to a step at dead_time
    (plus :data:`STEP_LAG`: the response of the discrete step_response)."""
    wn = math.sqrt(params.stiffness / INERTIA)
    zeta = params.damping / (2.0 * math.sqrt(params.stiffness * INERTIA))
    wd = wn * math.sqrt(1.0 - zeta**2)
    s = np.maximum(t - params.dead_time - STEP_LAG, 0.0)
    envelope = np.exp(-zeta * wn * s)
    return target * (
        1.0 - envelope * (np.cos(wd * s) + zeta / math.sqrt(1 - zeta**2) * np.sin(wd * s))
    )


#: A soft, lightly damped servo (zeta = 0.2, omega_n = 38 rad/s) with a 50 ms dead time.
SOFT = ServoParams(
    dead_time=0.05,
    deadband=0.0,
    stiffness=0.5,
    damping=2 * 0.2 * math.sqrt(0.5 * INERTIA),
    stall_torque=1.08,
    no_load_speed=7.48,
)


def test_the_inertia_of_the_test_joint_is_the_hand_computed_one() -> None:
    np.testing.assert_allclose(mass_matrix(one_joint(), np.zeros(1)), [[INERTIA]], rtol=1e-12)


def test_small_step_is_the_second_order_response_delayed_by_the_dead_time() -> None:
    r = 0.1  # K r = 0.05 N m: far below the line (checked below)
    t, q, qd, tau = step_response(SOFT, r, 0.6)
    # Nothing moves before the dead time, exactly.
    assert np.all(q[t <= SOFT.dead_time + 1e-12] == 0.0)
    assert np.all(tau[t < SOFT.dead_time - 1e-12] == 0.0)
    # The whole response is the closed form, to the switching step's O((omega_n dt)^2) of r
    # (RK4's own error elsewhere: O((omega_n dt)^4)).
    wn_dt = math.sqrt(SOFT.stiffness / INERTIA) * DT
    np.testing.assert_allclose(q, second_order(t, r, SOFT), rtol=0, atol=r * wn_dt**2 / 24)
    # ... so rise time and overshoot are the closed form's.
    zeta = SOFT.damping / (2.0 * math.sqrt(SOFT.stiffness * INERTIA))
    wd = math.sqrt(SOFT.stiffness / INERTIA) * math.sqrt(1 - zeta**2)
    rise = (math.pi - math.acos(zeta)) / wd
    crossing = np.argmax(q >= r)
    t_rise = np.interp(r, q[crossing - 1 : crossing + 1], t[crossing - 1 : crossing + 1])
    assert t_rise - SOFT.dead_time - STEP_LAG == pytest.approx(rise, abs=1e-5)
    overshoot = math.exp(-math.pi * zeta / math.sqrt(1 - zeta**2))
    assert (q.max() - r) / r == pytest.approx(overshoot, abs=1e-4)  # peak on a 1 ms grid
    # The torque limit never bound: the applied torque is the loop's own.
    line = SOFT.stall_torque * (1 - np.abs(qd) / SOFT.no_load_speed)
    assert np.all(np.abs(tau) < line)


def test_the_pure_function_form_is_the_same_servo() -> None:
    """joint_response, sampled at 1 ms: the step becomes a ramp over one sample, which is the
    step half a sample later to O((omega_n dt)^2)."""
    t = np.arange(0.0, 0.6, DT)
    r = 0.1
    q, _ = joint_response(SOFT, INERTIA, t, np.r_[0.0, np.full(t.size - 1, r)])
    assert np.all(q[t <= SOFT.dead_time + 1e-12] == 0.0)
    wn_dt = math.sqrt(SOFT.stiffness / INERTIA) * DT
    ramp = second_order(t - DT / 2 + STEP_LAG, r, SOFT)
    np.testing.assert_allclose(q, ramp, rtol=0, atol=r * wn_dt**2 / 8)
    with pytest.raises(ModelError, match="inertia must be a finite number > 0"):
        joint_response(SOFT, 0.0, t, q)


def test_large_step_approaches_the_no_load_speed_along_the_line() -> None:
    params = replace(SOFT, dead_time=0.01, stiffness=10.0, damping=0.02, stall_torque=0.1)
    r = 1.5
    t, q, qd, tau = step_response(params, r, 0.5)
    w0, ts = params.no_load_speed, params.stall_torque
    tau_m = INERTIA * w0 / ts  # 17 ms
    s = t - params.dead_time - STEP_LAG
    # Saturated while the loop asks for more than the line gives: K e - D w > T_s (1 - w/w0).
    loop = params.stiffness * (r - q) - params.damping * qd
    last = int(np.argmax((s > 0) & (loop <= ts + 1e-3))) - 1  # the end of the first run
    saturated = (s > 0) & (np.arange(t.size) <= last)
    closed = w0 * (1.0 - np.exp(-s / tau_m))
    tol = (DT / tau_m) ** 2 / 24  # the switching step's error, relative (as above)
    assert s[last] > 5 * tau_m  # long enough to reach the terminal speed
    np.testing.assert_allclose(qd[saturated], closed[saturated], rtol=0, atol=tol * w0)
    np.testing.assert_allclose(tau[saturated], ts * (1 - qd[saturated] / w0), atol=1e-9)
    assert qd[last] == pytest.approx(w0, rel=1e-2)  # the terminal velocity: the no-load speed
    assert qd.max() <= w0 * (1 + 1e-9)  # never faster than the line allows
    position = w0 * (s - tau_m * (1 - np.exp(-s / tau_m)))
    np.testing.assert_allclose(q[saturated], position[saturated], rtol=0, atol=tol * r)


def test_deadband_moves_the_target_and_the_joint_rests_within_it() -> None:
    params = replace(SOFT, deadband=0.01, damping=4 * SOFT.damping)  # zeta = 0.8
    r = 0.1
    t, q, qd, _ = step_response(params, r, 1.5)
    # Until the joint first enters the band it follows the second-order response toward
    # r - e_0 (not r: the loop ignores e_0 of the error).
    inside = int(np.argmax(q >= r - params.deadband))
    wn_dt = math.sqrt(params.stiffness / INERTIA) * DT
    target = r - params.deadband
    np.testing.assert_allclose(
        q[:inside], second_order(t[:inside], target, params), rtol=0, atol=r * wn_dt**2 / 24
    )
    # Then it coasts on the damping and comes to rest within the deadband of the target.
    assert abs(q[-1] - r) <= params.deadband
    assert abs(qd[-1]) < 1e-6
    assert abs(q[-1] - r) > 0.1 * params.deadband  # it stopped short, where the band begins


# ------------------------------------------------------------------------------ configs
def write_robot(tmp_path: Path, servo: object) -> Path:
    doc = yaml.safe_load((ROOT / "config" / "robot.yaml").read_text())
    doc["servo"] = servo
    path = tmp_path / "robot.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_defaults_and_per_joint_overrides(tmp_path: Path) -> None:
    names = [f"joint_{k}" for k in range(1, 9)]
    path = write_robot(
        tmp_path,
        {"defaults": {"dead_time": 0.02}, "joints": {"joint_3": {"stall_torque": 0.5}}},
    )
    servo = ServoModel.from_yaml(path, names)
    assert servo.joints[0] == replace(NOMINAL, dead_time=0.02)  # defaults over the nominal
    assert servo.joints[2] == replace(NOMINAL, dead_time=0.02, stall_torque=0.5)
    np.testing.assert_array_equal(servo.dead_times, 0.02)
    assert servo.packed[3].tolist() == [1.08, 1.08, 0.5] + [1.08] * 5  # row T_s
    assert servo.as_dict()["joints"] == {"joint_3": {**vars(servo.joints[2])}}
    assert servo.source == str(path) and len(servo.digest) == 8
    assert ServoModel.from_yaml(write_robot(tmp_path, None), names).joints == (NOMINAL,) * 8
    shipped = ServoModel.from_yaml(ROOT / "config" / "robot.yaml", names)
    assert shipped.joints == (NOMINAL,) * 8  # the config's values are the documented ones
    assert shipped.digest != servo.digest


@pytest.mark.parametrize(
    ("servo", "message"),
    [
        ({"defaults": {"stiffness": -1}}, "servo.defaults.stiffness must be a number >= 0"),
        ({"defaults": {"dead_time": "soon"}}, "servo.defaults.dead_time must be a number [s]"),
        ({"joints": {"joint_2": {"stall_torque": 0}}}, "servo.joints.joint_2.stall_torque"),
        ({"joints": {"joint_2": {"no_load_speed": ".nan"}}}, "joint_2.no_load_speed must be"),
        ({"defaults": {"stifness": 1}}, "servo.defaults: unknown keys ['stifness']"),
        ({"joints": {"joint_9": {}}}, "servo.joints: unknown joints ['joint_9']"),
        ({"gains": {}}, "servo: unknown keys ['gains']"),
        ([1, 2], "servo must be a mapping"),
    ],
)
def test_bad_servo_values_give_one_line_naming_the_file_and_key(
    tmp_path: Path, servo: object, message: str
) -> None:
    path = write_robot(tmp_path, servo)
    with pytest.raises(ModelError) as info:
        ServoModel.from_yaml(path, [f"joint_{k}" for k in range(1, 9)])
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_unlimited_servos_are_the_pd_law() -> None:
    pd = ServoModel.pd(2.0, 0.05, 3)
    assert pd.joints[0] == ServoParams(0.0, 0.0, 2.0, 0.05, math.inf, math.inf)
    assert pd.as_dict()["defaults"]["stall_torque"] is None  # inf: no limit, YAML-able
    with pytest.raises(ModelError, match="servo damping must be a number or 3 numbers"):
        ServoModel.pd(2.0, [0.1, 0.2], 3)


@pytest.mark.parametrize(
    ("config", "n", "axes"),
    [("paper_planar", 8, "z" * 8), ("paper_3d", 16, "xz" * 8), ("robot", 8, "xz" * 4)],
)
def test_the_paper_robots_load_with_their_servos_urdf_and_kinematics(
    config: str, n: int, axes: str
) -> None:
    path = ROOT / "config" / f"{config}.yaml"
    model, servos = load_servo_map(path)  # the driver's loader: model and channel map
    assert model.n_joints == n
    assert sorted(c.channel for c in servos.channels) == list(range(n))
    expected = {"x": [1.0, 0.0, 0.0], "z": [0.0, 0.0, 1.0]}
    assert model.axes.tolist() == [expected[a] for a in axes]
    assert ServoModel.from_yaml(path, model.joint_names).joints == (NOMINAL,) * n
    urdf = to_urdf(model)
    assert urdf.count("<joint ") == n and urdf.count('type="revolute"') == n
    # Straight: every CM on e2, 75 mm between joints (the paper's build in both variants).
    poses = link_poses(model, np.zeros(n))
    centres = np.array([p[:3, 3] for p in poses])
    np.testing.assert_allclose(centres[:, [0, 2]], 0.0, atol=1e-12)
    pivots = np.cumsum(model.lengths)[:-1] - model.lengths[0] / 2  # joint k at the end of body k-1
    np.testing.assert_allclose(centres[1:, 1], pivots + model.lengths[1:] / 2, atol=1e-12)


# --------------------------------------------------------------------------- prediction
def test_the_nominal_prediction_lags_the_gait_as_the_linearised_servos_say() -> None:
    """The dynamics node's pipeline (100 Hz commands, RK4 at 1 kHz, nominal servos from
    config/robot.yaml, no feed-forward: a pulse carries no rate) on the configured gait,
    against the linearisation about the straight pose: M*(0) q_ddot = K (q_ref(t - T_d) - q)
    - D q_dot, solved at the gait frequency."""
    path = ROOT / "config" / "robot.yaml"
    model = SnakeModel.from_yaml(path)
    servo = ServoModel.from_yaml(path, model.joint_names)
    gaits = yaml.safe_load((ROOT / "config" / "gaits.yaml").read_text())["/**"]["ros__parameters"]
    name = gaits["gait"]
    gait = make_gait(name, model, **gaits[name])
    p = servo.joints[0]
    h, t_end = 0.01, 6.0
    sim = Simulator(model, DT, servo=servo)
    reference = CommandReference(gait(0.0).q, timeout=0.5)
    source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward=False)
    sim.reset(0.0, gait(0.0).q, gait(0.0).qd)
    t, q = [], []
    for k in range(round(t_end / h) + 1):
        reference.push(k * h, gait(k * h).q, gait(k * h).qd)
        sim.run_until(k * h - 0.02, source, max_steps=100)
        t.append(sim.time)
        q.append(sim.q.copy())
    t_arr, q_arr = np.array(t), np.array(q)
    steady = t_arr > 3.0  # after the start transient (the slowest mode decays in ~1.3 s)
    omega = 2 * math.pi * gaits[name]["frequency"]
    amplitude = gaits[name]["amplitude"]
    # the reference's phasor c (q_ref = Re(c e^{i w t})) and the linear response's
    c = gait(0.0).q - 1j * gait(math.pi / 2 / omega).q
    m = mass_matrix(model, np.zeros(model.n_joints))
    eye = np.eye(model.n_joints)
    drive = p.stiffness * np.exp(-1j * omega * p.dead_time)
    linear = np.linalg.solve(
        -(omega**2) * m + 1j * omega * p.damping * eye + p.stiffness * eye, drive * c
    )
    moving = np.flatnonzero(np.abs(c) > 1e-9)
    assert moving.size >= 4
    lags = np.arange(-0.02, 0.15, 2e-4)
    exact = np.array([gait(float(tk)).q for tk in t_arr])
    for j in moving:
        error = q_arr[steady, j] - exact[steady, j]
        rms_linear = abs(linear[j] - c[j]) / math.sqrt(2)
        rms = math.sqrt(float(np.mean(error**2)))
        # The deadband adds at most e_0 of error; the 0.5 rad gait's nonlinearity a little.
        assert 0.8 * rms_linear <= rms <= 1.2 * rms_linear + p.deadband, (j, rms, rms_linear)
        fit = [
            np.mean((q_arr[steady, j] - np.interp(t_arr[steady] - lag, t_arr, exact[:, j])) ** 2)
            for lag in lags
        ]
        lag = float(lags[int(np.argmin(fit))])
        lag_linear = -float(np.angle(linear[j] / c[j])) / omega
        # The deadband holds the joint e_0 / (A w) longer at each reversal; the gait's size
        # (M*(q) is not M*(0)) shifts the phase by up to half a dead time.
        low = lag_linear - p.dead_time / 2
        high = lag_linear + p.deadband / (amplitude * omega) + p.dead_time / 2
        assert low <= lag <= high, (j, lag, lag_linear)
    # ... and the snake as a whole is late by about the dead time or more, never early.
    assert float(np.mean([-np.angle(linear[j] / c[j]) / omega for j in moving])) > p.dead_time / 2


@pytest.mark.parametrize("config", ["paper_planar", "paper_3d"])
def test_the_paper_robots_predict_stably_with_the_nominal_servos(
    config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The damping on light links is stiff: at one RK4 step per ms the linearised loop
    leaves RK4's stability region (the planar robot diverges within 11 ms, the 3D one
    chatters at 3x the no-load speed); the simulator's sub-steps keep it inside."""
    path = ROOT / "config" / f"{config}.yaml"
    model = SnakeModel.from_yaml(path)
    servo = ServoModel.from_yaml(path, model.joint_names)
    gait = make_gait("serpenoid", model)

    def run() -> tuple[float, float]:
        """1 s of the node's pipeline: the largest |q - gait| [rad] and |q_dot| [rad/s]."""
        sim = Simulator(model, DT, servo=servo)
        reference = CommandReference(gait(0.0).q, timeout=0.5)
        source = PrescribedInput(sim.fast_model, reference, servo.dead_times, feed_forward=False)
        sim.reset(0.0, gait(0.0).q, gait(0.0).qd)
        worst = fastest = 0.0
        for k in range(101):
            reference.push(k * 0.01, gait(k * 0.01).q, gait(k * 0.01).qd)
            sim.run_until(k * 0.01 - 0.02, source, max_steps=100)
            worst = max(worst, float(np.max(np.abs(sim.q - gait(sim.time).q))))
            fastest = max(fastest, float(np.max(np.abs(sim.qd))))
        return worst, fastest

    no_load_speed = servo.joints[0].no_load_speed
    assert Simulator(model, DT, servo=servo).substeps > 1
    worst, fastest = run()
    assert worst < 0.5  # rad, the amplitude: the servos lag the gait, nothing diverges
    assert fastest < no_load_speed
    monkeypatch.setattr(simulator, "SEARCHED_RK4_REACH", 1e9)  # one RK4 step per ms
    assert Simulator(model, DT, servo=servo).substeps == 1
    try:
        _, fastest = run()
    except SimulationError as exc:
        assert "left the finite numbers" in str(exc)
    else:
        assert fastest > 2 * no_load_speed

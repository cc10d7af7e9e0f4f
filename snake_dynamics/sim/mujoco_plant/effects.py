"""The laws of the effects the MFM model leaves out, as the MuJoCo plant applies them
(docs/hardware.md, "A plant that is not the model", eqs. 249-255). No MuJoCo here: the
servo spread in numpy, the per-step laws compiled (numba) so that the plant's step loop
runs them in one call, :func:`servo_controls`, with the servo model's own compiled kernel
(:func:`snake_dynamics.mfm.recursive.servo_torque_into`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.jit import compiled
from snake_dynamics.mfm.recursive import servo_torque_into
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.mujoco_plant.params import Battery, Bracket

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

#: The servo parameters the spread scales (dead time and deadband stay the plant file's).
SPREAD_KEYS = ("stiffness", "damping", "stall_torque", "no_load_speed")


def spread_servos(servo: ServoModel, spread: float, rng: np.random.Generator) -> ServoModel:
    """Each joint's own servo (eq. 249): K, D, T_s and w_0 of joint k times factors
    f ~ U[1 - spread, 1 + spread], drawn joint by joint in :data:`SPREAD_KEYS`' order.

    Args:
        servo: the plant file's servos, one per joint.
        spread: the half-width of the factors' range (0: the servos unchanged).
        rng: the generator (the plant file's ``effects.seed``).
    """
    if spread == 0.0:
        return servo
    joints = []
    for params in servo.joints:
        factors = rng.uniform(1.0 - spread, 1.0 + spread, len(SPREAD_KEYS))
        changes = {k: getattr(params, k) * f for k, f in zip(SPREAD_KEYS, factors, strict=True)}
        joints.append(dataclasses.replace(params, **changes))
    return ServoModel(tuple(joints), f"{servo.source} (spread +-{spread:g})")


def battery_array(battery: Battery | None) -> FloatArray:
    """The kernels' form of a battery: (V_open, V_nom, R, I_stall, I_idle); empty: none."""
    if battery is None:
        return np.zeros(0)
    return np.array(
        [
            battery.open_voltage,
            battery.nominal_voltage,
            battery.resistance,
            battery.stall_current,
            battery.idle_current,
        ]
    )


@compiled
def _supply_current(
    battery: FloatArray, torques: FloatArray, stall_torques: FloatArray, powered: FloatArray
) -> float:
    total = 0.0
    for k in range(torques.shape[0]):
        if powered[k] > 0.0:
            total += battery[4] + battery[3] * abs(torques[k]) / stall_torques[k]
    return total


@compiled
def _supply_scale(battery: FloatArray, current: float) -> float:
    volts: float = max(battery[0] - battery[2] * current, 0.0)
    return volts / float(battery[1])


def supply_current(
    battery: Battery, torques: FloatArray, stall_torques: FloatArray, powered: NDArray[np.bool_]
) -> float:
    """The total current the powered servos draw [A] (eq. 250):
    I = sum_k [I_idle + I_stall |tau_k| / T_s,k], the motor current proportional to its
    torque with k_t = T_s,k / I_stall at the nominal voltage.

    Args:
        battery: the supply.
        torques: each joint's motor torque at the output [N m], shape (n,).
        stall_torques: each servo's stall torque at the nominal voltage [N m], shape (n,).
        powered: which servos get pulses, shape (n,).
    """
    on = np.asarray(powered, dtype=np.float64)
    return float(_supply_current(battery_array(battery), torques, stall_torques, on))


def supply_scale(battery: Battery, current: float) -> float:
    """The terminal voltage over the nominal one, V / V_nom, with V = max(V_open - R I, 0)
    (eq. 250): a DC motor's stall torque and no-load speed both scale with it."""
    return float(_supply_scale(battery_array(battery), current))


@compiled
def _bracket_torque(
    delta: float, delta_dot: float, half_play: float, stiffness: float, damping: float
) -> float:
    if delta > half_play:
        return -stiffness * (delta - half_play) - damping * delta_dot
    if delta < -half_play:
        return -stiffness * (delta + half_play) - damping * delta_dot
    return 0.0


def bracket_torque(delta: float, delta_dot: float, backlash: float, bracket: Bracket) -> float:
    """The torque on a body from its servo's horn through the gears' play and the bracket
    (eqs. 251, 252), with delta = q - theta the body's angle past the horn's [rad]:
    tau = -k dz(delta, b/2) - c delta_dot while the teeth touch (|delta| > b/2), else 0,
    dz(x, h) = x - clip(x, -h, h).

    Args:
        delta: body angle less horn angle [rad].
        delta_dot: its rate [rad/s].
        backlash: the play's full width b [rad].
        bracket: the spring k [N m/rad] and damper c [N m s/rad].

    Returns:
        The torque on the body about its joint [N m]; the horn takes its opposite.
    """
    return float(
        _bracket_torque(delta, delta_dot, 0.5 * backlash, bracket.stiffness, bracket.damping)
    )


@compiled
def servo_controls(
    qpos: FloatArray,
    qvel: FloatArray,
    servo_q: IndexArray,
    servo_v: IndexArray,
    u: FloatArray,
    packed: FloatArray,
    battery: FloatArray,
    supply: FloatArray,
    lag: float,
    torque: FloatArray,
    powered: FloatArray,
    scaled: FloatArray,
    rate: FloatArray,
    ctrl: FloatArray,
) -> None:
    """One MuJoCo step's servo motors (eqs. 250, 255), written into ``ctrl``.

    The battery's current follows the last step's torques with the motors' electrical lag
    (I += (I_demand - I) lag), its terminal voltage scales every powered servo's T_s and
    w_0, and each servo's law (eqs. 202-206) gives tau from its shaft's angle and rate; the
    motor is ctrl - D qdot in MuJoCo, so ctrl = tau + D qdot: exact at the step's start,
    and the damping implicit in MuJoCo's integrator.

    Args:
        qpos, qvel: MuJoCo's state.
        servo_q, servo_v: each servo shaft's hinge in qpos and qvel, shape (n,).
        u: the references [tau_ff; q_ref; q_dot_ref] seen now (dead time applied), (3n,).
        packed: the servos' K, D, e_0, T_s, w_0 at the nominal voltage (limp joints: 0,
            limp damping, 0, no limit), (5, n).
        battery: :func:`battery_array` (empty: an ideal supply).
        supply: [current [A], V / V_nom], updated in place.
        lag: h / (tau_e + h), the current's step towards its demand.
        torque: the motors' torques of the last step [N m], (n,).
        powered: 1 for a powered servo, 0 for a limp one, (n,).
        scaled: scratch (5, n).
        rate: the shafts' rates it used [rad/s], written (n,).
        ctrl: MuJoCo's controls, written (n,).
    """
    n = servo_q.shape[0]
    shaft = np.empty(n)
    for k in range(n):
        shaft[k], rate[k] = qpos[servo_q[k]], qvel[servo_v[k]]
    scaled[:] = packed
    if battery.shape[0] > 0:
        demand = _supply_current(battery, torque, packed[3], powered)
        supply[0] += (demand - supply[0]) * lag
        supply[1] = _supply_scale(battery, supply[0])
        for k in range(n):
            if powered[k] > 0.0:
                scaled[3, k] *= supply[1]
                scaled[4, k] *= supply[1]
    servo_torque_into(scaled, u, shaft, rate, ctrl)
    for k in range(n):
        ctrl[k] += packed[1, k] * rate[k]


@compiled
def bracket_forces(
    qpos: FloatArray,
    qvel: FloatArray,
    joint_q: IndexArray,
    joint_v: IndexArray,
    half_play: float,
    stiffness: float,
    damping: float,
    qfrc: FloatArray,
) -> None:
    """Every bracket's torque (eq. 252) on its body's hinge, written into ``qfrc``
    (MuJoCo's qfrc_applied)."""
    for k in range(joint_q.shape[0]):
        qfrc[joint_v[k]] = _bracket_torque(
            qpos[joint_q[k]], qvel[joint_v[k]], half_play, stiffness, damping
        )


def warm_up(n: int = 2) -> None:
    """Compile :func:`servo_controls` and :func:`bracket_forces` for MuJoCo's arrays (1-D,
    contiguous float64) now; later processes load them from numba's cache."""
    qpos, qvel, index = np.zeros(7 + 2 * n), np.zeros(6 + 2 * n), np.arange(n, dtype=np.intp)
    packed = np.ones((5, n))
    servo_controls(
        qpos, qvel, index, index, np.zeros(3 * n), packed, battery_array(Battery()),
        np.array([0.0, 1.0]), 0.5, np.zeros(n), np.ones(n), np.zeros((5, n)), np.zeros(n),
        np.zeros(n),
    )  # fmt: skip
    bracket_forces(qpos, qvel, index, index, 0.0, 1.0, 0.0, np.zeros(6 + 2 * n))

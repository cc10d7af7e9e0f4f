"""Commands that compensate: servo targets pre-shaped so that the joints follow a gait
(docs/mfm.md, "Commands that compensate", eqs. 211-215; no ROS here).

A hobby servo gets a target angle and nothing else, and drives its joint with the torque of
eqs. 201-205: seen its dead time late, less its deadband, times K, less D times the joint's
own rate, clamped to the torque-speed line. Told the gait itself, it trails it. Inverting
the law for the torque the body needs to move along the gait (its inverse dynamics) gives
the target that makes the servo deliver exactly that torque, sent the dead time early:

* :func:`servo_error`: the position error the servo must see (eqs. 211, 212),
* :func:`compensated_command`: the target to send, and its rate (eq. 213),
* :func:`servo_demand`: the torque and speed the gait asks of every servo (eq. 214),
* :func:`saturation`: the worst sample where that demand exceeds the servo (eq. 215), and
  :func:`check_feasible`, which raises it as a one-line :class:`SaturationError`.

The body's load comes in as a function (:data:`Load`): :func:`fixed_tail_load` is the
fixed-tail MFM body's inverse dynamics, :func:`ground_load` the torques that move a snake
lying on its ground along the gait (eq. 216); :func:`body_load` picks the robot's.
:func:`crawl_saturation` judges a gait on the ground by the servos themselves: the share of
a period each servo spends on its torque-speed line carrying the body (eq. 217).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError, SnakeDynamicsError
from snake_dynamics.floating import (
    FloatingRun,
    lying_state,
    on_the_ground,
    simulate_prescribed_fast,
)
from snake_dynamics.gaits import JointTrajectory, PeriodicGait
from snake_dynamics.mfm import recursive
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.crawler import simulate_crawling

FloatArray = NDArray[np.float64]

#: t [s] -> (q, q_dot, q_ddot) of the desired motion, shape (n,) each.
Motion = Callable[[float], JointTrajectory]
#: (t [s], the motion's (q, q_dot, q_ddot) there) -> the joint torques that move the body so
#: [N m], shape (n,).
Load = Callable[[float, JointTrajectory], FloatArray]

#: Step of the forward difference that gives the command's rate [s]: its error, about
#: h |q_ref_ddot| / 2, is 1e-3 rad/s for a gait's 10 rad/s^2, its rounding 1e-12 rad/s.
RATE_STEP_S = 1e-4
#: Samples per period of :func:`period_times`.
PERIOD_SAMPLES = 200


class SaturationError(SnakeDynamicsError, ValueError):
    """A motion that asks more torque or speed of a servo than it can give."""


def fixed_tail_load(model: SnakeModel) -> Load:
    """The fixed-tail MFM body's inverse dynamics, tau = M* q_ddot + N* q_dot - F*(0)
    (eq. 81, compiled recursion), as the load on the servos.

    Raises:
        ModelError: a robot whose base floats (its load depends on the ground).
    """
    if model.base != "fixed":
        raise ModelError(
            f"{model.name}: compensation knows the load of a fixed tail only, and this robot's "
            f"base is {model.base}"
        )
    fast = recursive.FastModel(model)
    return lambda _, s: fast.inverse_dynamics(s.q, s.qd, s.qdd)


#: How long the ground's load is averaged over [s]: two servo pulse periods. A servo's
#: compliance spreads a landing body's impact over its loop's response; prescribed joints
#: feel it as a spike no servo could give, and none needs to.
GROUND_SMOOTHING_S = 0.04
#: Periods a gait runs on the ground before its load is taken (the start's transient).
SETTLING_PERIODS = 2


def ground_load(model: SnakeModel, gait: PeriodicGait, dt: float = 0.001) -> Load:
    """The torques that move a snake lying on its ground along ``gait`` (eq. 216): the
    prescribed-joint torques (eq. 228 under gravity and the ground) over the period after
    :data:`SETTLING_PERIODS` periods, averaged over :data:`GROUND_SMOOTHING_S`, as a
    function of the gait's phase (the motion's own time modulo the period).

    Args:
        model: the robot (made floating on its ground, :func:`floating.on_the_ground`).
        gait: the periodic gait.
        dt: the prescribed run's step [s].
    """
    if gait.frequency == 0.0:
        rest = np.zeros(model.n_joints)
        return lambda _, __: rest  # lying straight and still: the ground carries the body
    grounded = on_the_ground(model)
    period = 1.0 / gait.frequency
    steps = round(period / dt)
    run = simulate_prescribed_fast(
        grounded, gait, (SETTLING_PERIODS + 1) * steps * dt, dt, lying_state(grounded)
    )
    last = run.tau[-steps - 1 : -1]  # the torques at the starts of the last period's steps
    width = max(1, round(GROUND_SMOOTHING_S / dt))
    kernel = np.ones(width) / width
    wrapped = np.concatenate([last[-width:], last, last[:width]])
    smooth = np.column_stack(
        [np.convolve(wrapped[:, j], kernel, "same")[width:-width] for j in range(last.shape[1])]
    )
    start = run.t[-steps - 1]

    def load(t: float, _: JointTrajectory) -> FloatArray:
        # linear between the rows, not the nearest row: a step of the table would put a
        # jump into the command, and RATE_STEP_S (dt / 10) turns it into a rate of rad/s
        # that the command's own slope does not have (dynamics_node interpolates with it)
        x = ((t - start) % period) / dt
        row = math.floor(x)
        frac = x - row
        return np.asarray(
            (1.0 - frac) * smooth[row % steps] + frac * smooth[(row + 1) % steps],
            dtype=np.float64,
        )

    return load


def body_load(model: SnakeModel, gait: PeriodicGait) -> Load:
    """The robot's load on its servos: :func:`ground_load` for a robot on a floor
    (``base: floating`` with a ground), else :func:`fixed_tail_load`."""
    if model.base == "floating" and not model.wheels:
        return ground_load(model, gait)
    return fixed_tail_load(model)


def _stiffness(servo: ServoModel) -> FloatArray:
    """K of every joint [N m/rad], shape (n,).

    Raises:
        SaturationError: a servo without stiffness (K = 0 cannot be inverted).
    """
    stiffness = servo.column("stiffness")
    if np.any(stiffness <= 0.0):
        k = int(np.argmax(stiffness <= 0.0))
        raise SaturationError(
            f"joint {k + 1}'s servo has stiffness 0: a command cannot set its torque "
            f"({servo.source})"
        )
    return stiffness


def servo_error(servo: ServoModel, tau: FloatArray, qd: FloatArray) -> FloatArray:
    """e = e_db + clamp(e_db, -e_0, e_0) with e_db = (tau + D q_dot) / K (eqs. 211, 212):
    the error the servo must see to deliver tau while the joint turns at q_dot.

    Outside the deadband (|e_db| >= e_0) this is the law's exact inverse; within it the
    error stays continuous and the servo gives at most K e_0 less than tau.

    Args:
        servo: the servos (K > 0, D, e_0 of each joint).
        tau: the torques to deliver [N m], shape (..., n).
        qd: the joints' rates [rad/s], shape (..., n).

    Returns:
        Target minus angle [rad], shape (..., n).

    Raises:
        SaturationError: a servo with K = 0.
    """
    e_db = (tau + servo.column("damping") * qd) / _stiffness(servo)
    e_0 = servo.column("deadband")
    return np.asarray(e_db + np.clip(e_db, -e_0, e_0), dtype=np.float64)


def _ahead(
    motion: Motion, load: Load, servo: ServoModel, t: float
) -> tuple[FloatArray, FloatArray]:
    """q_d and the servo error of eqs. 211-212, each joint at t + its dead time [rad]."""
    dead_times = servo.dead_times
    q, tau, qd = (np.empty(dead_times.size) for _ in range(3))
    for delay in np.unique(dead_times):
        cols = dead_times == delay
        late = motion(t + float(delay))
        q[cols], qd[cols] = late.q[cols], late.qd[cols]
        tau[cols] = load(t + float(delay), late)[cols]
    return q, servo_error(servo, tau, qd)


def compensated_command(
    motion: Motion,
    load: Load,
    servo: ServoModel,
    t: float,
    command_delay: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """q_ref(t) = q_d(t + T_c + T_d) + e(t + T_c + T_d) (eq. 213): the command that makes a
    hobby servo (no rate reference) move its joint along ``motion``.

    Args:
        motion: the desired motion, t -> (q, q_dot, q_ddot); evaluated at times >= t.
        load: the body's inverse dynamics (:func:`fixed_tail_load`).
        servo: the servos of eqs. 201-205 (one dead time per joint).
        t: the time the command is sent [s].
        command_delay: T_c, how late the servo's target follows the command, beyond the
            dead time the servo model holds [s] (0: the command is the servo's target).

    Returns:
        q_ref [rad] and its rate [rad/s] (a forward difference over :data:`RATE_STEP_S`),
        shape (n,) each.

    Raises:
        SaturationError: a servo with K = 0.
    """
    now = np.add(*_ahead(motion, load, servo, t + command_delay))
    later = np.add(*_ahead(motion, load, servo, t + command_delay + RATE_STEP_S))
    return now, (later - now) / RATE_STEP_S


@dataclass(frozen=True)
class Demand:
    """What a motion asks of the servos at sample times (eq. 214).

    Attributes:
        t: the sample times [s], shape (m,).
        qd: the joints' rates [rad/s], shape (m, n).
        tau: the torques the body needs [N m], shape (m, n).
    """

    t: FloatArray
    qd: FloatArray
    tau: FloatArray


def servo_demand(motion: Motion, load: Load, times: ArrayLike) -> Demand:
    """tau = ID(q_d, q_dot_d, q_ddot_d) and q_dot_d at every sample (eq. 214).

    Args:
        motion: the desired motion.
        load: the body's inverse dynamics.
        times: the sample times [s], shape (m,).
    """
    t = np.asarray(times, dtype=np.float64)
    samples = [motion(float(ti)) for ti in t]
    return Demand(
        t,
        np.array([s.qd for s in samples]),
        np.array([load(float(ti), s) for ti, s in zip(t, samples, strict=True)]),
    )


@dataclass(frozen=True)
class Saturation:
    """The worst sample of a demand beyond a servo (eq. 215).

    Attributes:
        joint: joint index, 0-based.
        t: when [s].
        quantity: "speed" or "torque".
        demand: |q_dot| [rad/s] or tau [N m] asked.
        limit: the no-load speed [rad/s], or the torque-speed line's bound at that speed
            [N m] (signed as the demand).
        qd: the joint's rate there [rad/s].
    """

    joint: int
    t: float
    quantity: str
    demand: float
    limit: float
    qd: float

    def describe(self, joint_names: Sequence[str]) -> str:
        """One line naming the joint, the time, and the demand against the limit."""
        name = joint_names[self.joint]
        if self.quantity == "speed":
            return (
                f"{name} would turn at {self.demand:.2f} rad/s at t = {self.t:.3f} s, beyond its "
                f"servo's no-load speed {self.limit:.2f} rad/s"
            )
        return (
            f"{name} needs {self.demand:+.3f} N m at t = {self.t:.3f} s, beyond the "
            f"{self.limit:+.3f} N m its servo gives at {self.qd:+.2f} rad/s (torque-speed line)"
        )


def torque_limits(servo: ServoModel, qd: FloatArray) -> tuple[FloatArray, FloatArray]:
    """tau_lo(q_dot), tau_hi(q_dot) of the torque-speed line (eq. 204) [N m], shape of qd."""
    stall, speed = servo.column("stall_torque"), servo.column("no_load_speed")
    with np.errstate(invalid="ignore"):  # inf / inf: an unlimited servo
        ratio = np.nan_to_num(qd / speed)
    return -stall * np.minimum(1.0, 1.0 + ratio), stall * np.minimum(1.0, 1.0 - ratio)


def saturation(demand: Demand, servo: ServoModel) -> Saturation | None:
    """The sample where a servo falls shortest of the demand (eq. 215), or None if every
    sample is within every servo: |q_dot| <= w_0 and tau_lo(q_dot) <= tau <= tau_hi(q_dot).

    A speed beyond the no-load speed comes first; among torques, the largest ratio of demand
    to the line's bound.
    """
    speed = servo.column("no_load_speed")
    over_speed = np.abs(demand.qd) / speed
    if np.max(over_speed, initial=0.0) > 1.0:
        i, k = np.unravel_index(int(np.argmax(over_speed)), over_speed.shape)
        qd = float(demand.qd[i, k])
        return Saturation(int(k), float(demand.t[i]), "speed", abs(qd), float(speed[k]), qd)
    low, high = torque_limits(servo, demand.qd)
    bound = np.where(demand.tau >= 0.0, high, low)
    with np.errstate(divide="ignore"):  # a bound of 0 at the no-load speed: inf
        over = np.where(np.abs(demand.tau) > np.abs(bound), np.abs(demand.tau / bound), 0.0)
    if not np.any(over > 0.0):
        return None
    i, k = np.unravel_index(int(np.argmax(over)), over.shape)
    return Saturation(
        int(k),
        float(demand.t[i]),
        "torque",
        float(demand.tau[i, k]),
        float(bound[i, k]),
        float(demand.qd[i, k]),
    )


def period_times(gait: PeriodicGait, samples: int = PERIOD_SAMPLES) -> FloatArray:
    """``samples`` times over one period of ``gait`` [s] (a single one if it is at rest)."""
    if gait.frequency == 0.0:
        return np.zeros(1)
    return np.arange(samples, dtype=np.float64) / (samples * gait.frequency)


def check_feasible(
    gait: PeriodicGait, load: Load, servo: ServoModel, joint_names: Sequence[str]
) -> None:
    """Raise if one period of ``gait`` asks more of a servo than it gives (eqs. 214, 215).

    Raises:
        SaturationError: one line naming the joint, the time and the demand against the
            limit.
    """
    worst = saturation(servo_demand(gait, load, period_times(gait)), servo)
    if worst is not None:
        raise SaturationError(f"gait {gait.name}: {worst.describe(joint_names)}")


#: The share of a period a servo may spend on its torque-speed line before a gait on the
#: ground counts as more than it can give (eq. 217).
SATURATED_SHARE = 0.1


def crawl_saturation(
    model: SnakeModel, gait: PeriodicGait, servo: ServoModel, dt: float = 0.001
) -> FloatArray:
    """Each servo's share of a period on its torque-speed line (eq. 217), carrying the body
    lying on its ground along ``gait`` (:func:`snake_dynamics.sim.crawler.simulate_crawling`,
    the period after :data:`SETTLING_PERIODS`).

    Returns:
        The share per joint, 0..1, shape (n,).
    """
    grounded = on_the_ground(model)
    if gait.frequency == 0.0:
        return np.zeros(model.n_joints)
    steps = round(1.0 / (gait.frequency * dt))
    run = simulate_crawling(grounded, gait, (SETTLING_PERIODS + 1) * steps * dt, dt, servo)
    return saturated_share(run, servo, samples=steps)


def saturated_share(run: FloatingRun, servo: ServoModel, samples: int = 0) -> FloatArray:
    """Each servo's share of a run's samples (the last ``samples``; 0: all) with its torque
    on its torque-speed line (eq. 217), shape (n,)."""
    tau, qd = run.tau[-samples:], run.nu[-samples:, 6:]
    low, high = torque_limits(servo, qd)
    on_line = (tau >= high - 1e-9) | (tau <= low + 1e-9)
    return np.asarray(on_line.mean(axis=0), dtype=np.float64)


def check_crawl(
    model: SnakeModel, gait: PeriodicGait, servo: ServoModel, limit: float = SATURATED_SHARE
) -> None:
    """Raise if a servo carrying the body on its ground along ``gait`` spends more than
    ``limit`` of a period on its torque-speed line (eq. 217).

    Raises:
        SaturationError: one line naming the joint and its share.
    """
    share = crawl_saturation(model, gait, servo)
    k = int(np.argmax(share))
    if share[k] > limit:
        raise SaturationError(
            f"gait {gait.name}: on the ground {model.joint_names[k]}'s servo is at its torque-"
            f"speed limit {share[k]:.0%} of a period (more than {limit:.0%}: it cannot carry "
            "the body along the gait)"
        )

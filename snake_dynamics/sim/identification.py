"""Servo identification: the experiment, the prediction of a recording, and the least-squares
fit of the servo model's parameters (docs/mfm.md, "Identification", eqs. 207-210; no ROS,
no I/O).

* :class:`Excitation` is the experiment every joint plays at once: steps held still (small
  ones inside the loop's linear range, large ones on the motor's torque-speed line), then a
  chirp (eq. 207).
* :class:`Recording` holds what the robot did: the servos' reference (the angles their
  pulses carried) and the measured joint angles at the same instants.
* :func:`predict` is the servo model on the robot's MFM body driven by a recording's
  reference, sampled at its instants (eq. 208).
* :func:`fit_servo` finds the servo parameters shared by every joint that make
  :func:`predict` closest to the measurement, each joint's constant measurement offset
  eliminated in closed form (eq. 209), with standard errors from the Jacobian;
  :attr:`ServoFit.dead_time_after_pulse` is its dead time as a plant file gives it (eq. 210).
* :func:`fit_servo_per_joint` finds each joint's own stiffness, damping, stall torque and
  no-load speed from there, the dead time and deadband kept shared (eq. 470), and names the
  ones the experiment does not separate.
* :func:`in_parallel` runs a fit's independent predictions (a Jacobian's columns, a floor
  fit's takes) on every core the process may use.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import IdentificationError, ModelError, SimulationError
from snake_dynamics.gaits import Gait, JointTrajectory
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel, ServoParams
from snake_dynamics.sim.simulator import InputSource, Simulator

FloatArray = NDArray[np.float64]

#: The fitted parameters, in :class:`ServoParams` order; the last four are fitted as logs.
FITTED = ("dead_time", "deadband", "stiffness", "damping", "stall_torque", "no_load_speed")
_LOG = ("stiffness", "damping", "stall_torque", "no_load_speed")
#: Search bounds of dead_time [s] and deadband [rad].
_BOUNDS = {"dead_time": (0.0, 0.2), "deadband": (0.0, 0.1)}

_T = TypeVar("_T")
_R = TypeVar("_R")


def in_parallel(fn: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
    """``[fn(x) for x in items]``, on one thread per core this process may use: a
    prediction's time is nearly all in compiled kernels that release the GIL, so predictions
    run side by side (on this 2-core machine two servo predictions take 0.54 s against 0.72 s
    one after the other, two crawls 0.29 against 0.53: bench/README.md). The results, and so
    every fit, are the same as one at a time.

    Args:
        fn: one prediction (thread-safe: it may share nothing it writes).
        items: its arguments.
    """
    work = list(items)
    cores = len(os.sched_getaffinity(0))
    if cores < 2 or len(work) < 2:
        return [fn(x) for x in work]
    with ThreadPoolExecutor(min(cores, len(work))) as pool:
        return list(pool.map(fn, work))


def least_squares_workers() -> dict[str, Callable[..., list[object]]]:
    """scipy's ``least_squares`` keyword that spreads a finite-difference Jacobian's columns
    over the cores (:func:`in_parallel`), or none where scipy is older than 1.16 and has no
    ``workers`` (the fit is then the same, one prediction at a time)."""
    from scipy.optimize import least_squares

    if "workers" not in inspect.signature(least_squares).parameters:
        return {}
    return {"workers": in_parallel}


@dataclass(frozen=True)
class Excitation(Gait):
    """The identification experiment (eq. 207): every joint at once, joint k's motion
    multiplied by its sign s_k (alternating, so neighbours bend opposite ways).

    First the step levels, each held for ``hold`` seconds; then a chirp
    A sin(2 pi (f_0 t + (f_1 - f_0) t^2 / (2 T))) over T = ``chirp_time``, rising from
    ``chirp_start`` to ``chirp_end``; then the rest levels, small steps each held
    ``rest_hold`` seconds, long enough for every joint to come to rest at its deadband's
    edge; then rest.

    Attributes:
        n_joints: n.
        levels: the step levels [rad], each held ``hold`` s.
        hold: how long each level is held [s].
        chirp_amplitude: A [rad].
        chirp_start: f_0 [Hz].
        chirp_end: f_1 [Hz].
        chirp_time: T [s].
        rests: the small steps at the end [rad], each held ``rest_hold`` s.
        rest_hold: how long each of them is held [s].
    """

    n_joints: int
    levels: tuple[float, ...] = (
        *(0.0, 0.04, 0.0, -0.04, 0.0, 0.12, 0.0, -0.12, 0.0, 0.3, 0.0, -0.3, 0.0),
    )
    hold: float = 0.4
    chirp_amplitude: float = 0.12
    chirp_start: float = 0.5
    chirp_end: float = 3.0
    chirp_time: float = 5.0
    rests: tuple[float, ...] = (0.0, 0.03, 0.0, -0.03, 0.0, 0.03, 0.0, -0.03, 0.0)
    rest_hold: float = 0.7

    @classmethod
    def within(cls, lower: ArrayLike, upper: ArrayLike, fraction: float = 0.8) -> Excitation:
        """The default experiment, scaled down where a joint's limits are closer than its
        largest level over ``fraction``.

        Raises:
            IdentificationError: a joint whose range does not contain 0.
        """
        low, high = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        if np.any(low >= 0.0) or np.any(high <= 0.0):
            raise IdentificationError("every joint's limits must contain 0 rad (the rest pose)")
        base = cls(low.size)
        reach = fraction * float(min(-low.max(), high.min()))
        scale = min(1.0, reach / max(abs(x) for x in base.levels))
        return dataclasses.replace(
            base,
            levels=tuple(scale * x for x in base.levels),
            chirp_amplitude=min(base.chirp_amplitude, reach),
            rests=tuple(scale * x for x in base.rests),
        )

    @property
    def duration(self) -> float:
        """The experiment's length [s]."""
        return len(self.levels) * self.hold + self.chirp_time + len(self.rests) * self.rest_hold

    @property
    def signs(self) -> FloatArray:
        """s_k: +1 for joint 1, -1 for joint 2, ..."""
        return np.where(np.arange(self.n_joints) % 2 == 0, 1.0, -1.0)

    def evaluate(self, t: float) -> JointTrajectory:
        steps = len(self.levels) * self.hold
        zero = np.zeros(self.n_joints)
        if t < steps:
            level = self.levels[max(0, int(t // self.hold))]
            return JointTrajectory(self.signs * level, zero, zero)
        tc = t - steps
        if tc >= self.chirp_time:
            k = int((tc - self.chirp_time) // self.rest_hold)
            level = self.rests[k] if k < len(self.rests) else 0.0
            return JointTrajectory(self.signs * level, zero, zero)
        rate = (self.chirp_end - self.chirp_start) / self.chirp_time
        phase = 2.0 * math.pi * (self.chirp_start * tc + 0.5 * rate * tc * tc)
        omega = 2.0 * math.pi * (self.chirp_start + rate * tc)
        a = self.chirp_amplitude * self.signs
        q = a * math.sin(phase)
        qd = a * omega * math.cos(phase)
        qdd = a * (2.0 * math.pi * rate * math.cos(phase) - omega * omega * math.sin(phase))
        return JointTrajectory(q, qd, qdd)


@dataclass(frozen=True)
class Recording:
    """What the robot did: at each instant, the angle each servo was told to hold (its
    pulse) and the angle measured at its potentiometer.

    Attributes:
        t: sample times [s], increasing, shape (m,).
        reference: the servos' commanded angles [rad], shape (m, n).
        measured: the measured joint angles [rad], shape (m, n).
        joint_names: the n joints, tail to head.
    """

    t: FloatArray
    reference: FloatArray
    measured: FloatArray
    joint_names: tuple[str, ...]

    def __post_init__(self) -> None:
        t, ref, meas = (
            np.asarray(x, dtype=np.float64) for x in (self.t, self.reference, self.measured)
        )
        n = len(self.joint_names)
        if t.ndim != 1 or t.size < 3 or ref.shape != (t.size, n) or meas.shape != ref.shape:
            raise IdentificationError(
                f"a recording needs >= 3 samples of {n} joints' reference and measurement, got "
                f"t {t.shape}, reference {ref.shape}, measured {meas.shape}"
            )
        if not (
            np.all(np.diff(t) > 0.0) and np.all(np.isfinite(ref)) and np.all(np.isfinite(meas))
        ):
            raise IdentificationError("recording times must increase and every value be finite")
        for name, value in (("t", t), ("reference", ref), ("measured", meas)):
            object.__setattr__(self, name, value)


#: The servo pulse period [s]: a servo takes a new target once per pulse.
PULSE_PERIOD = 0.02
#: The pulse's width at the servo range's centre [s] (1500 us of 500-2500): a servo reads
#: its target at the pulse's end, this long after it began (eq. 210).
PULSE_WIDTH = 0.0015
#: From a command to the end of the pulse that carries it, on average [s]: the mean wait for
#: the next pulse and the pulse itself (eq. 210).
COMMAND_TO_PULSE_END = 0.5 * PULSE_PERIOD + PULSE_WIDTH


class SampledReference(InputSource):
    """The servos' reference from a recording (eq. 208): the commanded angle, linear between
    the recorded samples, seen ``dead_time`` late (eq. 201); no rate reference and no
    feed-forward (a pulse carries the angle alone).

    Args:
        t: the samples' times [s], shape (m,).
        reference: the commanded angles [rad], shape (m, n).
        dead_time: T_d [s].
    """

    def __init__(self, t: FloatArray, reference: FloatArray, dead_time: float) -> None:
        self.t, self.reference, self.dead_time = t, reference, dead_time

    def inputs(self, t: FloatArray) -> FloatArray:
        n = self.reference.shape[1]
        u = np.zeros((t.size, 3 * n))
        late = np.asarray(t, dtype=np.float64) - self.dead_time
        for j in range(n):
            u[:, n + j] = np.interp(late, self.t, self.reference[:, j])
        return u


def predict(
    model: SnakeModel, servo: ServoParams | ServoModel, recording: Recording, dt: float = 0.001
) -> FloatArray:
    """The servo model on the MFM body, driven by the recording's reference from rest at its
    first reference (a take starts at rest), sampled at its times (eq. 208).

    Args:
        model: the robot's body.
        servo: one servo for every joint, or one per joint (with one dead time).
        recording: the reference and the times.
        dt: the step [s].

    Returns:
        The predicted joint angles [rad], shape (m, n).

    Raises:
        IdentificationError: a servo model whose joints have different dead times, or a
            prediction that leaves the finite numbers.
    """
    servos = servo if isinstance(servo, ServoModel) else ServoModel.uniform(servo, model.n_joints)
    dead = np.unique(servos.dead_times)
    if dead.size != 1:
        raise IdentificationError("predict() takes servos with one dead time for every joint")
    sim = Simulator(model, dt, servo=servos, t0=float(recording.t[0]))
    sim.reset(float(recording.t[0]), recording.reference[0], np.zeros(model.n_joints))
    steps = math.ceil((recording.t[-1] - recording.t[0]) / dt) + 1
    source = SampledReference(recording.t, recording.reference, float(dead[0]))
    try:
        qs, _ = sim.advance(steps, source)
    except SimulationError as exc:
        raise IdentificationError(f"the prediction diverged: {exc}") from None
    grid = recording.t[0] + dt * np.arange(steps + 1)
    q = np.vstack([recording.reference[:1], qs])
    return np.column_stack([np.interp(recording.t, grid, q[:, j]) for j in range(q.shape[1])])


def residuals(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """measured - predicted with each joint's mean removed: the prediction error once each
    potentiometer's constant offset is taken out (eq. 209) [rad], shape (m, n)."""
    error = measured - predicted
    return np.asarray(error - error.mean(axis=0))


def rms_error(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """Each joint's RMS of :func:`residuals` [rad], shape (n,)."""
    return residual_rms(residuals(predicted, measured))


def residual_rms(error: FloatArray) -> FloatArray:
    """Each joint's RMS of residuals (eq. 209) [rad], shape (m, n) -> (n,)."""
    return np.asarray(np.sqrt(np.mean(error**2, axis=0)))


def optimum_rms(fun: FloatArray, shape: tuple[int, ...]) -> FloatArray:
    """Each joint's RMS error at a fit's optimum [rad], shape (n,): its residuals as the
    optimiser last computed them there (``fun``, raveled), not predicted again.

    Raises:
        IdentificationError: the optimum is a point whose prediction failed (the fill of
            1 rad everywhere, which residuals with each joint's mean removed never are).
    """
    error = np.asarray(fun).reshape(shape)
    if np.all(error == 1.0):
        raise IdentificationError("no prediction of the fit stayed finite: check the recording")
    return residual_rms(error)


@dataclass(frozen=True)
class ServoFit:
    """A least-squares fit of the servo parameters (eq. 209).

    Attributes:
        params: the fitted servo; its dead time counts from the command the pulses carry
            (the prediction's meaning: it includes the mean wait for the next pulse and the
            pulse itself).
        stderr: each fitted parameter's standard error, in its unit (:data:`FITTED` order).
        rms: each joint's RMS error of the fitted prediction on the fitting data [rad].
        evaluations: predictions the fit ran.
        samples: residuals fitted (samples x joints).
    """

    params: ServoParams
    stderr: dict[str, float]
    rms: FloatArray
    evaluations: int
    samples: int

    @property
    def dead_time_after_pulse(self) -> float:
        """The servo's own delay after the pulse that carries a target has ended, as a plant
        file gives it: the fitted dead time less the mean wait for the next pulse and the
        pulse itself (eq. 210) [s]."""
        return self.params.dead_time - COMMAND_TO_PULSE_END


def seen_from_the_command(servo: ServoModel) -> ServoModel:
    """A plant file's servos as a prediction from the commanded reference sees them (eq. 208):
    each dead time, which a plant counts from the end of the pulse, plus the mean wait for
    the next pulse and the pulse itself (eq. 210 solved for T_d)."""
    return ServoModel(
        tuple(
            dataclasses.replace(j, dead_time=j.dead_time + COMMAND_TO_PULSE_END)
            for j in servo.joints
        ),
        servo.source,
    )


#: The optimiser's unit of each fitted parameter: ms, mrad, then logs (all of order one).
_SCALE = {"dead_time": 1e-3, "deadband": 1e-3}


def _to_params(x: FloatArray) -> ServoParams:
    values = {
        name: float(math.exp(v)) if name in _LOG else float(v) * _SCALE[name]
        for name, v in zip(FITTED, x, strict=True)
    }
    return ServoParams(**values)


def _to_x(params: ServoParams) -> FloatArray:
    return np.array(
        [
            math.log(getattr(params, n)) if n in _LOG else getattr(params, n) / _SCALE[n]
            for n in FITTED
        ]
    )


def standard_errors(jac: FloatArray, cost: float) -> FloatArray:
    """The fitted unknowns' standard errors from a least-squares optimum (eq. 209):
    sqrt(diag(s^2 (JᵀJ)⁻¹)), s^2 = 2 cost / (residuals - unknowns) the residual variance
    (white residuals assumed: read them as a lower bound).

    Args:
        jac: the residuals' Jacobian at the optimum, shape (residuals, unknowns).
        cost: scipy's cost there, half the sum of squared residuals.
    """
    dof = max(jac.shape[0] - jac.shape[1], 1)
    cov = np.linalg.pinv(jac.T @ jac) * (2.0 * cost / dof)
    return np.asarray(np.sqrt(np.maximum(np.diag(cov), 0.0)), dtype=np.float64)


def _residuals_of(
    model: SnakeModel,
    recording: Recording,
    start: ServoParams,
    servo_of: Callable[[FloatArray], ServoParams | ServoModel],
    dt: float,
    progress: Callable[[int, float], None] | None,
) -> tuple[Callable[[FloatArray], FloatArray], itertools.count[int]]:
    """A servo fit's residuals as a function of its unknowns (eq. 209), after the checks
    :func:`fit_servo` and :func:`fit_servo_per_joint` both make.

    Args:
        model: the robot's body.
        recording: the experiment.
        start: the fit's starting servo.
        servo_of: the servo the unknowns stand for.
        dt: the prediction's step [s].
        progress: called with (evaluations, RMS error [rad]) after each prediction.

    Returns:
        The residuals [rad], raveled (1 rad everywhere for a servo that cannot be built or
        predicted, so that the optimiser steps back), and the counter that numbers their
        calls from 1: one ``next()`` on it after the fit, less one, is the evaluations.

    Raises:
        IdentificationError: the recording and model have different joint counts, or
            ``start`` has no finite torque-speed line.
    """
    if len(recording.joint_names) != model.n_joints:
        raise IdentificationError(
            f"the recording has {len(recording.joint_names)} joints, the model {model.n_joints}"
        )
    if not (math.isfinite(start.stall_torque) and math.isfinite(start.no_load_speed)):
        raise IdentificationError("start the fit from a servo with a finite torque-speed line")
    count = itertools.count(1)
    measured = recording.measured

    def fun(x: FloatArray) -> FloatArray:
        k = next(count)  # atomic: the Jacobian's columns run on threads
        try:
            error = residuals(predict(model, servo_of(x), recording, dt), measured)
        except (IdentificationError, ModelError):
            error = np.full(measured.shape, 1.0)  # far off: the optimiser steps back
        if progress is not None:
            progress(k, float(np.sqrt(np.mean(error**2))))
        return error.ravel()

    return fun, count


def fit_servo(
    model: SnakeModel,
    recording: Recording,
    start: ServoParams,
    *,
    dt: float = 0.001,
    progress: Callable[[int, float], None] | None = None,
    tolerance: float = 1e-4,
) -> ServoFit:
    """The servo parameters, the same for every joint, that best predict a recording
    (eq. 209: nonlinear least squares, scipy's trust-region reflective method; the torque
    parameters as logs, dead time and deadband within :data:`_BOUNDS`).

    Without a torque sensor or gravity the motion only tells torques relative to the body's
    inertia: the stiffness, damping and stall torque found are those that move ``model``'s
    body (a body x% heavier than the model gives x% stronger servos).

    Args:
        model: the robot's body.
        recording: the experiment.
        start: the starting guess (e.g. the nominal servo); an unlimited stall torque or
            no-load speed is not a valid start.
        dt: the prediction's step [s].
        progress: called with (evaluations, RMS error [rad]) after each prediction.
        tolerance: the least squares stop once a step changes the cost, or the unknowns
            (ms, mrad and logs), by less than this share (scipy's ``ftol`` and ``xtol``).

    Raises:
        IdentificationError: the recording and model disagree, or no prediction stays finite.
    """
    from scipy.optimize import least_squares

    fun, count = _residuals_of(model, recording, start, _to_params, dt, progress)
    low = np.array([_BOUNDS[k][0] / _SCALE[k] if k in _BOUNDS else -np.inf for k in FITTED])
    high = np.array([_BOUNDS[k][1] / _SCALE[k] if k in _BOUNDS else np.inf for k in FITTED])
    x0 = np.clip(_to_x(start), low, high)
    result = least_squares(
        fun,
        x0,
        bounds=(low, high),
        x_scale="jac",
        diff_step=1e-3,
        ftol=tolerance,
        xtol=tolerance,
        **least_squares_workers(),
    )
    params = _to_params(result.x)
    sd = standard_errors(result.jac, result.cost)
    stderr = {
        name: float(getattr(params, name) * s) if name in _LOG else float(s) * _SCALE[name]
        for name, s in zip(FITTED, sd, strict=True)
    }
    rms = optimum_rms(result.fun, recording.measured.shape)
    return ServoFit(params, stderr, rms, next(count) - 1, int(recording.measured.size))


#: The parameters a per-joint fit gives each joint its own of (eq. 470); dead time and
#: deadband stay the shared fit's.
PER_JOINT = ("stiffness", "damping", "stall_torque", "no_load_speed")
#: A per-joint parameter whose standard error exceeds this share of its value is not
#: separated by the experiment: the joint keeps the shared fit's value.
SEPARATED = 0.10
#: Each joint's parameters stay within this factor of the shared fit's either way: servos of
#: one batch differ by 10-20 %, and an unbounded step of the approximate Jacobian once asked
#: for a servo so stiff that its prediction's steps did not fit in memory.
SPAN = 2.0
#: The per-joint fit's forward-difference step, relative to each log (as fit_servo's).
STEP = 1e-3
#: The most steps the per-joint fit takes from the shared fit (each a prediction and a
#: Jacobian of 12): it starts near its optimum.
MAX_STEPS = 15


@dataclass(frozen=True)
class PerJointFit:
    """A least-squares fit of each joint's own servo (eq. 470).

    Attributes:
        servo: each joint's servo: the shared fit's dead time and deadband, its own
            :data:`PER_JOINT` parameters (the shared fit's where not separated).
        stderr: per joint, each :data:`PER_JOINT` parameter's standard error, in its unit.
        unseparated: (joint name, parameter) of those the experiment did not separate (a
            standard error above :data:`SEPARATED` of the value), which keep the shared value.
        joint_names: the n joints, tail to head.
        rms: each joint's RMS error of the fitted prediction on the fitting data [rad].
        evaluations: predictions the fit ran.
    """

    servo: ServoModel
    stderr: tuple[dict[str, float], ...]
    unseparated: tuple[tuple[str, str], ...]
    joint_names: tuple[str, ...]
    rms: FloatArray
    evaluations: int


def neighbour_sparsity(samples: int, n_joints: int, per_joint: int) -> NDArray[np.bool_]:
    """Which residuals each per-joint parameter moves, as the fit's Jacobian is estimated
    (eq. 470): joint k's own and its two neighbours' (the body passes a servo's torque on
    to the next joints, weaker and weaker). Joints three apart share no residual, so their
    columns are differenced in one prediction: 3 x ``per_joint`` predictions a Jacobian
    instead of ``n_joints`` x ``per_joint``; the farther joints' small share is left out
    of the Jacobian (the residuals themselves are exact).

    Args:
        samples: the recording's samples.
        n_joints: n.
        per_joint: parameters per joint.

    Returns:
        shape (samples x n_joints, n_joints x per_joint), residuals in ``ravel()`` order of
        (samples, n_joints).
    """
    near = np.abs(np.subtract.outer(np.arange(n_joints), np.arange(n_joints))) <= 1
    rows = np.tile(near, (samples, 1))  # (samples * n, n): sample-major, joint-minor
    return np.repeat(rows, per_joint, axis=1)


def fit_servo_per_joint(
    model: SnakeModel,
    recording: Recording,
    shared: ServoParams,
    *,
    dt: float = 0.001,
    progress: Callable[[int, float], None] | None = None,
) -> PerJointFit:
    """Each joint's own stiffness, damping, stall torque and no-load speed that best predict
    a recording, from the shared fit (:func:`fit_servo`), its dead time and deadband kept
    (eq. 470: the least squares of eq. 209 over 4 n logs).

    The experiment moves every joint at once, so each joint's parameters show in its own
    residuals above all; one the motion hardly excites (a stall torque the joint never
    reaches) has a large standard error and keeps the shared value (:attr:`PerJointFit.
    unseparated`). Torques are relative to ``model``'s body, as :func:`fit_servo`'s.

    Args:
        model: the robot's body.
        recording: the experiment.
        shared: the shared fit's servo (finite torque-speed line).
        dt: the prediction's step [s].
        progress: called with (evaluations, RMS error [rad]) after each prediction.

    Raises:
        IdentificationError: the recording and model disagree, or no prediction stays finite.
    """
    from scipy.optimize import least_squares

    n = model.n_joints

    def servos(x: FloatArray) -> ServoModel:
        logs = np.exp(x.reshape(n, len(PER_JOINT)))
        return ServoModel(
            tuple(
                dataclasses.replace(shared, **dict(zip(PER_JOINT, map(float, row), strict=True)))
                for row in logs
            ),
            "identified per joint",
        )

    fun, count = _residuals_of(model, recording, shared, servos, dt, progress)
    x0 = np.tile([math.log(getattr(shared, p)) for p in PER_JOINT], n)
    near = neighbour_sparsity(recording.t.size, n, len(PER_JOINT))
    last: list[tuple[FloatArray, FloatArray]] = []  # the residuals at the latest point

    def residuals_at(x: FloatArray) -> FloatArray:
        if not (last and np.array_equal(last[0][0], x)):
            last[:] = [(x.copy(), fun(x))]
        return last[0][1]

    def jac(x: FloatArray) -> FloatArray:
        """Forward differences, the columns of joints three apart in one prediction."""
        f0, h = residuals_at(x), STEP * np.maximum(1.0, np.abs(x))
        groups = [
            [(k * len(PER_JOINT) + p) for k in range(first, n, 3)]
            for first in range(min(3, n))
            for p in range(len(PER_JOINT))
        ]

        def moved(columns: list[int]) -> FloatArray:
            y = x.copy()
            y[columns] += h[columns]
            return fun(y)

        out = np.zeros((f0.size, x.size))
        for columns, f in zip(groups, in_parallel(moved, groups), strict=True):
            for c in columns:
                out[near[:, c], c] = (f - f0)[near[:, c]] / h[c]
        return out

    span = math.log(SPAN)
    result = least_squares(
        residuals_at,
        x0,
        jac=jac,
        bounds=(x0 - span, x0 + span),
        x_scale="jac",
        ftol=1e-4,
        xtol=1e-4,
        max_nfev=MAX_STEPS,
    )
    jac_at = result.jac
    relative = standard_errors(jac_at, result.cost).reshape(n, len(PER_JOINT))
    fitted = servos(result.x)
    joints, stderr, unseparated = [], [], []
    for name, params, rel in zip(recording.joint_names, fitted.joints, relative, strict=True):
        loose = [p for p, r in zip(PER_JOINT, rel, strict=True) if not r <= SEPARATED]
        unseparated += [(name, p) for p in loose]
        own = dataclasses.replace(params, **{p: getattr(shared, p) for p in loose})
        joints.append(own)
        stderr.append(
            {p: float(r * getattr(params, p)) for p, r in zip(PER_JOINT, rel, strict=True)}
        )
    servo = ServoModel(tuple(joints), "identified per joint")
    rms = rms_error(predict(model, servo, recording, dt), recording.measured)
    return PerJointFit(
        servo, tuple(stderr), tuple(unseparated), recording.joint_names, rms, next(count) - 1
    )

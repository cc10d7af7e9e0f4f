"""Time integration of eq. (84) with classical RK4, the paper's integrator.

Inputs (torques) are evaluated at the RK4 stage times t, t + dt/2 and t + dt; with
trajectory kinks on step boundaries the scheme keeps its 4th-order accuracy. They are
sampled at every stage time before the loop: a torque function once per stage time, a table
of torques (:func:`stage_times`) as given, a periodic gait (the reference, the prescribed
torques of eq. 81) at every stage time in one call.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError, SimulationError, StateError
from snake_dynamics.gaits import Gait
from snake_dynamics.mfm import kinetics, recursive
from snake_dynamics.mfm.kinematics import joint_vector
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel, ServoParams

FloatArray = NDArray[np.float64]
#: tau = tau_fn(t) [N m] at time t [s]
TorqueFn = Callable[[float], ArrayLike]
#: t [s] -> (q [rad], q_dot [rad/s], q_ddot [rad/s^2]) of n joints, e.g. a gait.
Motion = Callable[[float], tuple[ArrayLike, ArrayLike, ArrayLike]]
ProgressFn = Callable[[float], None]


def rk4_step(
    accel: Any,
    params: Any,
    q: FloatArray,
    qd: FloatArray,
    tau0: FloatArray,
    tau_half: FloatArray,
    tau1: FloatArray,
    dt: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """One classical RK4 step of the first-order system (q, q_dot)' = (q_dot, q_ddot).

    The literal path's integrator; :func:`recursive.rk4_servo_steps` is its compiled twin.

    Args:
        accel: q_ddot = accel(params, q, q_dot, tau) (eq. 84).
        params: the model data ``accel`` needs.
        q: joint angles at t [rad], shape (n,).
        qd: joint rates at t [rad/s], shape (n,).
        tau0: torques at t [N m].
        tau_half: torques at t + dt/2 [N m].
        tau1: torques at t + dt [N m].
        dt: step [s].

    Returns:
        q and q_dot at t + dt, and q_ddot at t (the first stage).
    """
    a1 = accel(params, q, qd, tau0)
    v2 = qd + 0.5 * dt * a1
    a2 = accel(params, q + 0.5 * dt * qd, v2, tau_half)
    v3 = qd + 0.5 * dt * a2
    a3 = accel(params, q + 0.5 * dt * v2, v3, tau_half)
    v4 = qd + dt * a3
    a4 = accel(params, q + dt * v3, v4, tau1)
    q_new = q + (dt / 6.0) * (qd + 2.0 * v2 + 2.0 * v3 + v4)
    qd_new = qd + (dt / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
    return q_new, qd_new, a1


def _literal_servo_accel(
    params: tuple[SnakeModel, FloatArray], q: FloatArray, qd: FloatArray, u: FloatArray
) -> FloatArray:
    model, servo = params
    return kinetics.forward_dynamics(model, q, qd, recursive.servo_torque(servo, u, q, qd))


@dataclass(frozen=True)
class Servo:
    """Position servos tracking a reference.

    The PD form, tau = tau_ff + k_p (q_ref - q) + k_d (q_dot_ref - q_dot), or with ``model``
    the complete servo of eqs. 201-206 (dead time, deadband, torque-speed line; build it
    with :meth:`of`).

    Open-loop replay of inverse-dynamics torques is what the paper validates; a long chain
    whirling fast is unstable open loop (its linearisation has eigenvalues with positive
    real part), so long runs of long snakes need the servos' own feedback.

    Attributes:
        stiffness: k_p [N m/rad], scalar or per joint.
        damping: k_d [N m s/rad], scalar or per joint.
        reference: t -> (q_ref, q_dot_ref, q_ddot_ref), e.g. a gait; the servos see it
            ``dead_time`` late.
        model: the complete servo model (None: PD with the gains above).
    """

    stiffness: ArrayLike
    damping: ArrayLike
    reference: Motion
    model: ServoModel | None = None

    @classmethod
    def of(cls, model: ServoModel, reference: Motion) -> Servo:
        """The servos of ``model`` tracking ``reference``."""
        return cls(model.column("stiffness"), model.column("damping"), reference, model)

    def servo_model(self, n: int) -> ServoModel:
        """The servo model of n joints (see :func:`servo_model`)."""
        return servo_model(self.stiffness, self.damping, self.model, n)


def servo_model(
    stiffness: ArrayLike, damping: ArrayLike, model: ServoModel | None, n: int
) -> ServoModel:
    """``model`` checked for n joints, or (None) the PD gains as a :class:`ServoModel`.

    Raises:
        SimulationError: gains or a model that do not fit n joints.
    """
    if model is None:
        try:
            return ServoModel.pd(stiffness, damping, n)
        except ModelError as exc:
            raise SimulationError(str(exc)) from None
    if model.n_joints != n:
        raise SimulationError(f"a servo model of {model.n_joints} joints for {n} joints")
    return model


@dataclass(frozen=True)
class SimulationResult:
    """Samples of a simulated run, one row per step boundary.

    Attributes:
        t: times [s], shape (N,).
        q: joint angles [rad], shape (N, n).
        qd: joint rates [rad/s], shape (N, n).
        qdd: joint accelerations [rad/s^2], shape (N, n).
        tau: applied joint torques [N m], shape (N, n).
        kinetic: kinetic energy (eq. 65) [J], shape (N,).
        potential: gravitational potential energy [J], shape (N,).
        joint_names: names of the n joints.
    """

    t: FloatArray
    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray
    kinetic: FloatArray
    potential: FloatArray
    joint_names: tuple[str, ...]

    @property
    def energy(self) -> FloatArray:
        """Total mechanical energy K + V [J], shape (N,)."""
        return self.kinetic + self.potential

    def save_npz(self, path: str | Path) -> Path:
        """Write every array (and the joint names) to a compressed ``.npz`` file."""
        path = Path(path)
        np.savez_compressed(
            path,
            t=self.t,
            q=self.q,
            qd=self.qd,
            qdd=self.qdd,
            tau=self.tau,
            kinetic=self.kinetic,
            potential=self.potential,
            energy=self.energy,
            joint_names=np.array(self.joint_names),
        )
        return path

    def save_csv(self, path: str | Path) -> Path:
        """Write one CSV row per sample: t, q_*, qd_*, qdd_*, tau_*, energy columns."""
        path = Path(path)
        groups = [("q", self.q), ("qd", self.qd), ("qdd", self.qdd), ("tau", self.tau)]
        header = ["t"] + [f"{g}_{name}" for g, _ in groups for name in self.joint_names]
        header += ["kinetic", "potential", "energy"]
        table = np.column_stack(
            [self.t] + [a for _, a in groups] + [self.kinetic, self.potential, self.energy]
        )
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            writer.writerows(np.char.mod("%.10g", table).tolist())
        return path


class DivergenceError(SimulationError):
    """A run whose state left the finite numbers; it keeps the finite part of the run.

    Attributes:
        t: time of the first sample that is not finite [s].
        result: the run up to the sample before it (t = 0, dt, ..., t - dt).
    """

    def __init__(self, message: str, t: float, result: SimulationResult) -> None:
        super().__init__(message)
        self.t = t
        self.result = result


def step_count(t_end: float, dt: float) -> int:
    """The number of steps dt [s] in a run of t_end [s].

    Raises:
        SimulationError: a step that is not finite and > 0, or a t_end that is not a whole
            number of steps.
    """
    if not (math.isfinite(dt) and dt > 0.0):
        raise SimulationError(f"dt must be a finite time step > 0 s, got {dt!r}")
    if not (math.isfinite(t_end) and t_end >= dt):
        raise SimulationError(f"t_end must be finite and >= dt = {dt} s, got {t_end!r}")
    steps = round(t_end / dt)
    if abs(steps * dt - t_end) > 1e-9 * max(1.0, t_end):
        raise SimulationError(f"t_end = {t_end} s is not a whole number of steps dt = {dt} s")
    return int(steps)


def stage_times(t_end: float, dt: float) -> FloatArray:
    """The RK4 stage times of a run, t_j = j dt/2 for j = 0 .. 2 steps [s]: where
    :func:`simulate` samples its inputs (a torque table's rows).

    Raises:
        SimulationError: see :func:`step_count`.
    """
    return np.arange(2 * step_count(t_end, dt) + 1, dtype=np.float64) * (0.5 * dt)


def motion_samples(motion: Motion, times: FloatArray) -> tuple[Any, Any, Any]:
    """q [rad], q_dot [rad/s] and q_ddot [rad/s^2] of ``motion`` at every time of ``times``
    [s], each a sequence of len(times) rows.

    A :class:`Gait` samples itself (:meth:`Gait.samples`: a :class:`PeriodicGait` at every
    time in one call, bit for bit the values of one call per time) and gives (m, n) arrays;
    any other motion is called once per time and gives lists of what it returned.
    """
    if isinstance(motion, Gait):
        return motion.samples(times)
    samples = [motion(float(ti)) for ti in times]
    return [s[0] for s in samples], [s[1] for s in samples], [s[2] for s in samples]


def _samples(model: SnakeModel, values: Any, times: FloatArray, name: str) -> FloatArray:
    """Per-joint vectors sampled at ``times`` as one (len(times), n) array, validated at once.

    Raises:
        StateError: the first sample that is not n finite numbers, named ``name(t)``.
    """
    try:
        table = np.asarray(values, dtype=np.float64)
        if table.shape == (len(times), model.n_joints) and np.isfinite(table).all():
            return table
    except (TypeError, ValueError):
        pass  # ragged or not numbers: the loop below names the first bad sample
    for value, tj in zip(values, times, strict=True):
        joint_vector(model, value, f"{name}({tj:.6g})")
    raise StateError(f"{name} must give {model.n_joints} finite numbers at every stage time")


def simulate(
    model: SnakeModel,
    q0: ArrayLike,
    qd0: ArrayLike,
    tau_fn: TorqueFn | FloatArray | None,
    t_end: float,
    dt: float,
    *,
    servo: Servo | None = None,
    method: Literal["fast", "literal"] = "fast",
    progress: ProgressFn | None = None,
) -> SimulationResult:
    """Integrate eq. (84) from (q0, q_dot0) over [0, t_end] with classical RK4.

    Args:
        model: the snake.
        q0: initial joint angles [rad], shape (n,).
        qd0: initial joint rates [rad/s], shape (n,).
        tau_fn: joint torques tau(t) [N m], evaluated at the RK4 stage times; or those
            torques as a table, one row per time of :func:`stage_times` (t_end, dt), shape
            (2 steps + 1, n) (no Python call per stage time); None for tau = 0 (a passive
            snake, or pure servo feedback).
        t_end: duration [s], a whole number of steps.
        dt: time step [s].
        servo: optional servo feedback added to ``tau_fn`` (see :class:`Servo`), evaluated
            with the stage states.
        method: "fast" (recursive, compiled; default) or "literal" (B, M*, N* as printed).
        progress: called with the completed fraction (0..1) about every 1% of the run.

    Returns:
        The sampled run, t = 0, dt, ..., t_end; ``tau`` holds the applied torques.

    Raises:
        SimulationError: bad settings.
        DivergenceError: the state stopped being finite (a SimulationError with the time and
            the run up to the last finite sample).
        StateError: bad initial state, or ``tau_fn``/the reference gave a bad vector.
    """
    steps = step_count(t_end, dt)
    n = model.n_joints
    q = np.array(joint_vector(model, q0, "q0"))
    qd = np.array(joint_vector(model, qd0, "qd0"))
    if method not in ("fast", "literal"):
        raise SimulationError(f"method must be 'fast' or 'literal', got {method!r}")
    # One input layout for both paths: u = [tau_ff; q_ref; q_dot_ref] under the servo law,
    # with a zero PD (pure torque input) when there is no servo.
    servos = servo.servo_model(n) if servo is not None else ServoModel.pd(0.0, 0.0, n)
    packed = recursive.FastModel(model)
    accel: Any
    params: Any
    if method == "fast":
        accel, params = recursive.servo_accel_kernel, (packed.params, servos.packed)
    else:
        accel, params = _literal_servo_accel, (model, servos.packed)

    # Open-loop inputs, sampled at every stage time t = j dt/2 (RK4 uses t, t+dt/2, t+dt).
    stage_t = stage_times(t_end, dt)
    inputs = np.zeros((2 * steps + 1, 3 * n))
    if tau_fn is not None:
        inputs[:, :n] = _torque_samples(model, tau_fn, stage_t)
    if servo is not None:  # each servo sees the reference its dead time late (eq. 201)
        for delay in np.unique(servos.dead_times):
            late = stage_t - float(delay)
            q_late, qd_late, _ = motion_samples(servo.reference, late)
            cols = np.flatnonzero(servos.dead_times == delay)
            inputs[:, n + cols] = _samples(model, q_late, late, "reference q")[:, cols]
            inputs[:, 2 * n + cols] = _samples(model, qd_late, late, "reference qd")[:, cols]
    t = stage_t[::2]
    qs, qds, qdds = (np.empty((steps + 1, n)) for _ in range(3))
    qs[0], qds[0] = q, qd
    # the fast kernel gives each step's energies from its first stage; literal: after the run
    energy = np.empty((steps + 1, 2))
    kernel_energy = method == "fast"
    chunk = max(1, steps // 100)  # report progress about every 1%
    for first in range(0, steps, chunk):
        last = min(first + chunk, steps)
        if method == "fast":
            recursive.rk4_servo_steps(
                params,
                qs[first],
                qds[first],
                inputs[2 * first : 2 * last + 1],
                dt,
                qs[first + 1 : last + 1],
                qds[first + 1 : last + 1],
                qdds[first:last],
                energy[first:last],
            )
        else:
            for i in range(first, last):
                qs[i + 1], qds[i + 1], qdds[i] = rk4_step(
                    accel,
                    params,
                    qs[i],
                    qds[i],
                    inputs[2 * i],
                    inputs[2 * i + 1],
                    inputs[2 * i + 2],
                    dt,
                )
        rows = slice(first + 1, last + 1)
        finite = np.isfinite(qs[rows]).all(axis=1) & np.isfinite(qds[rows]).all(axis=1)
        if not finite.all():
            bad = first + 1 + int(np.argmin(finite))
            raise DivergenceError(
                f"the state left the finite numbers at t = {t[bad]:.6g} s (open-loop replay of a "
                "long snake is unstable: add servo feedback, or reduce dt)",
                t=float(t[bad]),
                result=_result(
                    model,
                    servos,
                    inputs,
                    t[:bad],
                    qs[:bad],
                    qds[:bad],
                    qdds[:bad],
                    energy[:bad] if kernel_energy else None,
                ),
            )
        if progress is not None:
            progress(last / steps)
    qdds[steps] = accel(params, qs[steps], qds[steps], inputs[-1])
    if kernel_energy:
        energy[steps] = recursive.energies(model, qs[steps], qds[steps])[0]
    return _result(model, servos, inputs, t, qs, qds, qdds, energy if kernel_energy else None)


def _torque_samples(
    model: SnakeModel, tau_fn: TorqueFn | FloatArray, times: FloatArray
) -> FloatArray:
    """:func:`simulate`'s torques at the stage times ``times`` [s], shape (len(times), n).

    Raises:
        StateError: a table of another shape, or a bad sample (named with its time).
    """
    if callable(tau_fn):
        return _samples(model, [tau_fn(tj) for tj in times.tolist()], times, "tau_fn")
    rows = (times.size, model.n_joints)
    if not isinstance(tau_fn, np.ndarray) or tau_fn.shape != rows:
        shape = tau_fn.shape if isinstance(tau_fn, np.ndarray) else type(tau_fn).__name__
        raise StateError(
            f"tau_fn must be a function of t [s] or a table of torques at stage_times(t_end, "
            f"dt), shape {rows}; got {shape}"
        )
    return _samples(model, tau_fn, times, "tau_fn")


def _result(
    model: SnakeModel,
    servos: ServoModel,
    inputs: FloatArray,
    t: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
    qdds: FloatArray,
    energy: FloatArray | None,
) -> SimulationResult:
    """The :class:`SimulationResult` of the first len(t) samples of a run.

    Args:
        model: the snake.
        servos: the servos.
        inputs: u = [tau_ff; q_ref; q_dot_ref] at every stage time, shape (2 steps + 1, 3n).
        t: sample times [s], shape (N,).
        qs: joint angles [rad], shape (N, n).
        qds: joint rates [rad/s], shape (N, n).
        qdds: joint accelerations [rad/s^2], shape (N, n).
        energy: kinetic and potential energy [J], shape (N, 2), or None to compute them.
    """
    # the applied torque (the servo law's, or tau_ff alone under a zero PD) at every sample
    samples = inputs[: 2 * t.size : 2]  # a strided view: no copy
    applied = recursive.servo_torques(servos.packed, samples, qs, qds)
    energies = recursive.energies(model, qs, qds) if energy is None else energy
    return SimulationResult(
        t=t,
        q=qs,
        qd=qds,
        qdd=qdds,
        tau=applied,
        kinetic=energies[:, 0],
        potential=energies[:, 1],
        joint_names=tuple(model.joint_names),
    )


def prescribed_torques(model: SnakeModel, trajectory: Motion) -> TorqueFn:
    """tau(t) = inverse_dynamics(q(t), q_dot(t), q_ddot(t)): the paper's validation input.

    Args:
        model: the snake.
        trajectory: t -> (q, q_dot, q_ddot), e.g. a gait's ``evaluate``.

    Returns:
        A torque function for :func:`simulate` (fast inverse dynamics, eq. 81).
    """
    packed = recursive.FastModel(model)

    def tau(t: float) -> FloatArray:
        q, qd, qdd = trajectory(t)
        return packed.inverse_dynamics(
            np.ascontiguousarray(q, dtype=float),
            np.ascontiguousarray(qd, dtype=float),
            np.ascontiguousarray(qdd, dtype=float),
        )

    return tau


def prescribed_torque_table(model: SnakeModel, trajectory: Motion, times: FloatArray) -> FloatArray:
    """:func:`prescribed_torques` at every time of ``times`` [s] at once (eq. 81): a torque
    table for :func:`simulate` when ``times`` is :func:`stage_times`.

    Args:
        model: the snake.
        trajectory: t -> (q, q_dot, q_ddot), e.g. a gait (a :class:`PeriodicGait` is
            sampled in one call, see :func:`motion_samples`).
        times: sample times [s], shape (m,).

    Returns:
        Joint torques [N m], shape (m, n).

    Raises:
        StateError: a trajectory sample that is not n finite numbers, named with its time.
    """
    q, qd, qdd = (
        _samples(model, values, times, f"trajectory {name}")
        for values, name in zip(motion_samples(trajectory, times), ("q", "qd", "qdd"), strict=True)
    )
    return recursive.inverse_dynamics_rows(recursive.FastModel(model).params, q, qd, qdd)


def simulate_gait(
    model: SnakeModel,
    gait: Motion,
    t_end: float,
    dt: float,
    *,
    stiffness: float = 0.0,
    damping: float = 0.0,
    method: Literal["fast", "literal"] = "fast",
    progress: ProgressFn | None = None,
) -> SimulationResult:
    """The paper's validation loop: gait -> inverse dynamics torques -> RK4 (eqs. 81, 84).

    Starts on the gait at t = 0. With ``stiffness`` or ``damping`` > 0 the servos also
    track the gait (see :class:`Servo`); with both zero the torques are pure feed-forward.
    """
    start = gait(0.0)
    servo = None
    if stiffness > 0.0 or damping > 0.0:
        servo = Servo(stiffness, damping, gait)
    return simulate(
        model,
        start[0],
        start[1],
        prescribed_torque_table(model, gait, stage_times(t_end, dt)),
        t_end,
        dt,
        servo=servo,
        method=method,
        progress=progress,
    )


def joint_response(
    params: ServoParams,
    inertia: float,
    t: ArrayLike,
    q_ref: ArrayLike,
    qd_ref: ArrayLike | None = None,
    q0: float = 0.0,
    qd0: float = 0.0,
) -> tuple[FloatArray, FloatArray]:
    """One joint of inertia J about its axis (no gravity, nothing else moving) driven by the
    servo: J q_ddot = tau(q_ref(t - T_d), q, q_dot) (eqs. 201-206), by RK4 on the samples.

    A pure function of the parameters, for closed-form checks and for least-squares fits of
    a recorded response. The reference is linear between its samples and held outside them.

    Args:
        params: the servo.
        inertia: J [kg m^2], > 0.
        t: sample times [s], increasing and evenly spaced, shape (m,).
        q_ref: the reference at those times [rad], shape (m,).
        qd_ref: its rate [rad/s], shape (m,); None: zero (a pulse carries no rate).
        q0: angle at t[0] [rad].
        qd0: rate at t[0] [rad/s].

    Returns:
        q [rad] and q_dot [rad/s] at the sample times, shape (m,) each.

    Raises:
        ModelError: bad inertia or samples.
    """
    times = np.asarray(t, dtype=np.float64)
    ref = np.asarray(q_ref, dtype=np.float64)
    rate = np.zeros_like(ref) if qd_ref is None else np.asarray(qd_ref, dtype=np.float64)
    if not (math.isfinite(inertia) and inertia > 0.0):
        raise ModelError(f"inertia must be a finite number > 0 kg m^2, got {inertia!r}")
    if times.ndim != 1 or times.size < 2 or ref.shape != times.shape or rate.shape != ref.shape:
        raise ModelError("t, q_ref and qd_ref must be 1-D with the same length >= 2")
    h = float(times[1] - times[0])
    if not (h > 0.0 and np.allclose(np.diff(times), h, rtol=1e-9, atol=0.0)):
        raise ModelError("t must be evenly spaced and increasing")
    late = times[0] + 0.5 * h * np.arange(2 * times.size - 1) - params.dead_time
    u = np.zeros((late.size, 3))  # [tau_ff; q_ref; q_dot_ref] at the RK4 stage times
    u[:, 1] = np.interp(late, times, ref)
    u[:, 2] = np.interp(late, times, rate)
    packed = ServoModel((params,)).packed

    def accel(_: None, x: FloatArray, v: FloatArray, row: FloatArray) -> FloatArray:
        return np.asarray(recursive.servo_torque(packed, row, x, v)) / inertia

    q, qd = np.empty(times.size), np.empty(times.size)
    x, v = np.array([q0], dtype=np.float64), np.array([qd0], dtype=np.float64)
    q[0], qd[0] = x[0], v[0]
    for i in range(times.size - 1):
        x, v, _ = rk4_step(accel, None, x, v, u[2 * i], u[2 * i + 1], u[2 * i + 2], h)
        q[i + 1], qd[i + 1] = x[0], v[0]
    return q, qd

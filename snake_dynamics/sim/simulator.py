"""Incremental MFM simulation: the maths behind the dynamics node (no ROS here).

:class:`Simulator` advances eq. (84) with classical RK4 in batches of fixed steps, with the
inputs sampled at the RK4 stage times exactly as :func:`integrators.simulate` does, under a
servo model (:mod:`snake_dynamics.servo`, eqs. 201-206: the PD law
tau = tau_ff + k_p (q_ref - q) + k_d (q_dot_ref - q_dot), or a hobby servo with dead time,
deadband and a torque-speed line). Its inputs come from an :class:`InputSource`:
:class:`PrescribedInput` feeds a stream of commanded joint states to the servos, each its
dead time late, with or without feed-forward torques by inverse dynamics (eq. 81), the
paper's ``prescribed`` mode; :class:`TorqueInput` holds the latest commanded torques.

Driven in lock-step by an external loop (an emulated robot at 1 kHz): push each new
reference sample into a :class:`CommandReference`, then ``run_until`` the next step.

Times here are seconds on the caller's clock (the nodes use seconds since their start).
"""

from __future__ import annotations

import math
import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.floating import check_step
from snake_dynamics.floating import warm_up as floating_warm_up
from snake_dynamics.gaits import JointTrajectory
from snake_dynamics.jit import compiled
from snake_dynamics.mfm import recursive
from snake_dynamics.mfm.integrators import motion_samples, servo_model, simulate
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel

FloatArray = NDArray[np.float64]
#: t [s] -> the joints' (q, q_dot, q_ddot), e.g. a gait.
Motion = Callable[[float], JointTrajectory]


def joint_command(
    joint_names: Sequence[str],
    names: Sequence[str],
    position: Sequence[float],
    velocity: Sequence[float] = (),
) -> tuple[FloatArray, FloatArray]:
    """A named joint command (as in a ROS JointState message) in the model's joint order.

    Args:
        joint_names: the model's joints, in order.
        names: the command's joint names, each model joint exactly once, in any order.
        position: commanded angles [rad] (or torques [N m]), one per name.
        velocity: commanded rates [rad/s], one per name, or empty for zeros.

    Returns:
        position and velocity, shape (n,) each, in the order of ``joint_names``.

    Raises:
        StateError: unknown, missing or repeated names, wrong lengths, NaN or inf.
    """
    names = list(names)
    if sorted(names) != sorted(joint_names):
        unknown = sorted(set(names) - set(joint_names))
        missing = sorted(set(joint_names) - set(names))
        raise StateError(
            f"joint names must be {', '.join(joint_names)} once each; got {len(names)} names"
            + (f", unknown {unknown}" if unknown else "")
            + (f", missing {missing}" if missing else "")
        )
    n = len(names)
    if len(position) != n or len(velocity) not in (0, n):
        raise StateError(
            f"{n} names need {n} positions and {n} (or 0) velocities, "
            f"got {len(position)} and {len(velocity)}"
        )
    order = [names.index(name) for name in joint_names]
    q = np.asarray(position, dtype=np.float64)[order]
    qd = np.asarray(velocity, dtype=np.float64)[order] if len(velocity) else np.zeros(n)
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
        raise StateError("positions and velocities must be finite (got NaN or inf)")
    return q, qd


# ------------------------------------------------------------------------------ inputs
def _timeout(value: float) -> float:
    if not (math.isfinite(value) and value > 0.0):
        raise SimulationError(f"command timeout must be a finite time > 0 s, got {value!r}")
    return float(value)


class InputSource(ABC):
    """The simulator's input u = [tau_ff; q_ref; q_dot_ref] at given times."""

    @abstractmethod
    def inputs(self, t: FloatArray) -> FloatArray:
        """u at the times ``t`` [s], shape (m,) -> (m, 3n) [N m, rad, rad/s]."""


def finite_rows(*rows: FloatArray) -> int:
    """How many leading rows of ``rows`` (arrays of one length) are finite in every array:
    the steps a fastmath kernel took before its state left the finite numbers (the kernels
    cannot test it themselves: LLVM may drop the test).

    A finite sum of an array says every entry is finite (NaN and inf carry into the sum),
    one reduction per tick of the dynamics node; a sum that is not finite (a bad entry, or
    finite entries that overflow) falls to the test row by row."""
    if all(math.isfinite(np.add.reduce(r, axis=None)) for r in rows):
        return int(rows[0].shape[0])
    bad = ~np.logical_and.reduce([np.isfinite(r).all(axis=1) for r in rows])
    return int(np.argmax(bad)) if bad.any() else int(rows[0].shape[0])


class CommandReference:
    """A reference trajectory through sampled commands (t_k, q_k, q_dot_k), e.g. at 100 Hz.

    Between samples it is the cubic Hermite interpolant (q and q_dot exact at the samples;
    errors about h^4 |q| / 384 in q and h^2 |q| / 12 in q_ddot for a sample period
    h), so a simulation that runs a little behind the newest command gets a smooth, accurate
    feed-forward. After the newest sample it continues with that sample's velocity (q_ddot =
    0); with no command for longer than ``timeout`` it holds the last position at rest.
    Before the first command it holds ``rest``.

    Args:
        rest: the angles held before the first command [rad], shape (n,).
        timeout: age after which a command is stale [s].
        history: samples further than this behind the newest are dropped [s] (None: the
            ``timeout``); a simulation that runs up to this far behind its newest command
            still interpolates between the commands it is at.
    """

    def __init__(self, rest: ArrayLike, timeout: float, history: float | None = None) -> None:
        self.timeout = _timeout(timeout)
        self.history = self.timeout if history is None else _timeout(history)
        # the kept samples are rows [_first, _end) of buffers that grow by doubling and are
        # compacted when full: a push writes one row, with no new arrays per command
        self._times = np.empty(0)
        self._qs = np.empty((0, 0))
        self._qds = np.empty((0, 0))
        self._first = self._end = 0
        self.hold(rest)

    def push(self, t: float, q: FloatArray, qd: FloatArray) -> bool:
        """Add the command (q [rad], q_dot [rad/s]) valid at time t [s].

        Returns:
            False (and ignores it) if it is not newer than the newest sample.
        """
        first, end = self._first, self._end
        if end > first and t <= self._times[end - 1]:
            return False
        # drop the samples older than the history; the newest old sample stays: it starts
        # the first interval (one a push at a steady rate: a scan, not a search)
        oldest, times = t - self.history, self._times
        while first < end - 1 and times[first] < oldest:
            first += 1
        if end == self._times.size:  # full: move the kept rows to the front, grow if crowded
            kept = end - first
            size = max(64, self._times.size * (2 if 2 * kept > self._times.size else 1))
            for name in ("_times", "_qs", "_qds"):
                rows = getattr(self, name)
                buffer = rows if size == rows.shape[0] else np.empty((size, *rows.shape[1:]))
                buffer[:kept] = rows[first:end]
                setattr(self, name, buffer)
            first, end = 0, kept
        self._times[end], self._qs[end], self._qds[end] = t, q, qd
        self._first, self._end = first, end + 1
        return True

    @property
    def newest(self) -> float | None:
        """Time of the newest command [s], or None before one (or after :meth:`hold`)."""
        return float(self._times[self._end - 1]) if self._end > self._first else None

    @property
    def latest(self) -> FloatArray:
        """The newest commanded angles [rad], shape (n,) (the held ones before a command)."""
        return (self._qs[self._end - 1] if self._end > self._first else self._rest).copy()

    def hold(self, q: ArrayLike) -> None:
        """Forget the commands and hold ``q`` [rad] at rest."""
        self._rest = np.array(q, dtype=np.float64)
        if self._qs.shape[1:] != self._rest.shape:
            self._times = np.empty(0)
            self._qs = np.empty((0, self._rest.size))
            self._qds = np.empty((0, self._rest.size))
        self._first = self._end = 0

    def samples(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """The kept samples as :func:`_hermite` takes them: times [s] (k,), q [rad] and q_dot
        [rad/s] (k, n) (views); before a command, no time and the held angles as the one row
        (before the first sample: held, at rest)."""
        first, end = self._first, self._end
        if end == first:
            return self._times[:0], self._rest[None, :], self._qds[:0]
        return self._times[first:end], self._qs[first:end], self._qds[first:end]

    def evaluate(self, t: FloatArray, delays: FloatArray | None = None) -> JointTrajectory:
        """q [rad], q_dot [rad/s], q_ddot [rad/s^2] at the times ``t``, shape (m, n) each;
        joint c at t - delays[c] where ``delays`` [s], shape (n,), are given."""
        t = np.ascontiguousarray(t, dtype=np.float64)
        n = self._rest.size
        out = np.zeros((3, t.size, n))
        late = np.zeros(n) if delays is None else delays
        _hermite(t, late, *self.samples(), self.timeout, out[0], out[1], out[2])
        return JointTrajectory(out[0], out[1], out[2])


@compiled
def _hermite(
    t: FloatArray,
    delays: FloatArray,
    times: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
    timeout: float,
    q: FloatArray,
    qd: FloatArray,
    qdd: FloatArray,
) -> None:
    """:meth:`CommandReference.evaluate` on samples (times, qs, qds): fills q, qd, qdd
    (zeroed, shape (m, n)), joint c at the times t - delays[c], t of shape (m,).

    Each joint's sample interval is searched once, then followed forward while the times
    increase (a tick's stage times do), not searched again at every time.
    """
    count = times.shape[0]
    for c in range(q.shape[1]):
        k = -1
        for j in range(t.shape[0]):
            tj = t[j] - delays[c]
            if k < 0 or tj < times[k]:  # the last sample at or before tj
                k = np.searchsorted(times, tj, side="right") - 1
            else:
                while k + 1 < count and times[k + 1] <= tj:
                    k += 1
            if k < 0:  # before the first sample: its position, at rest
                q[j, c] = qs[0, c]
            elif k == count - 1:  # after the newest: constant velocity while live, then at rest
                s = tj - times[k]
                if s <= timeout:
                    q[j, c] = qs[k, c] + qds[k, c] * s
                    qd[j, c] = qds[k, c]
                else:
                    q[j, c] = qs[k, c]
            else:  # cubic Hermite between samples k and k + 1
                h = times[k + 1] - times[k]
                u = (tj - times[k]) / h
                u2, u3 = u * u, u * u * u
                p0, p1 = qs[k, c], qs[k + 1, c]
                m0, m1 = qds[k, c] * h, qds[k + 1, c] * h
                q[j, c] = (
                    (2 * u3 - 3 * u2 + 1) * p0
                    + (u3 - 2 * u2 + u) * m0
                    + (3 * u2 - 2 * u3) * p1
                    + (u3 - u2) * m1
                )
                qd[j, c] = (
                    (6 * u2 - 6 * u) * (p0 - p1) + (3 * u2 - 4 * u + 1) * m0 + (3 * u2 - 2 * u) * m1
                ) / h
                qdd[j, c] = ((12 * u - 6) * (p0 - p1) + (6 * u - 4) * m0 + (6 * u - 2) * m1) / (
                    h * h
                )


class PrescribedInput(InputSource):
    """The prescribed mode: the commanded trajectory is the servos' reference, each servo
    seeing it its dead time late (eq. 201).

    With ``feed_forward`` (the paper's validation loop) tau_ff is the inverse dynamics of the
    commanded trajectory and the loop's rate reference its q_dot; without it (a hobby servo,
    whose pulse carries the target angle and nothing else) tau_ff = 0, the rate reference
    is 0 (eq. 203 damps the joint's own rate) and the servo alone moves the joint.

    Args:
        model: the packed snake.
        reference: the commanded trajectory.
        dead_time: T_d [s], scalar or per joint (>= 0).
        feed_forward: add the inverse-dynamics torques.
    """

    def __init__(
        self,
        model: recursive.FastModel,
        reference: CommandReference,
        dead_time: ArrayLike = 0.0,
        feed_forward: bool = True,
    ) -> None:
        self.model = model
        self.reference = reference
        self.feed_forward = feed_forward
        n = model.model.n_joints
        # a writable copy: a read-only array is another type to numba, compiled at first use
        self._dead_time = np.array(np.broadcast_to(np.asarray(dead_time, dtype=np.float64), (n,)))

    def inputs(self, t: FloatArray) -> FloatArray:
        reference = self.reference
        if not self.feed_forward:  # the node's hobby servos: one compiled call
            return _angle_inputs(t, self._dead_time, *reference.samples(), reference.timeout)
        n = self._dead_time.size
        q, qd, qdd = reference.evaluate(t, self._dead_time)
        out = np.zeros((q.shape[0], 3 * n))
        out[:, n : 2 * n] = q
        out[:, 2 * n :] = qd
        for j in range(q.shape[0]):
            out[j, :n] = self.model.inverse_dynamics(q[j], qd[j], qdd[j])
        return out


@compiled
def _angle_inputs(
    t: FloatArray,
    delays: FloatArray,
    times: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
    timeout: float,
) -> FloatArray:
    """u = [0; q_ref; 0] at the times ``t`` (m,) [s], (m, 3n): the reference's angles
    (:func:`_hermite` on the samples of :meth:`CommandReference.samples`), joint c at
    t - delays[c] [s], as the only input (no feed-forward, no rate reference)."""
    m, n = t.shape[0], delays.shape[0]
    q, qd, qdd = np.zeros((m, n)), np.zeros((m, n)), np.zeros((m, n))
    _hermite(t, delays, times, qs, qds, timeout, q, qd, qdd)
    out = np.zeros((m, 3 * n))
    out[:, n : 2 * n] = q
    return out


class MotionInput(InputSource):
    """A gait as the servos' reference, each servo seeing it its dead time late, without
    feed-forward and with a zero rate reference (a hobby servo, as the dynamics node's
    prescribed mode), or with the gait's rates as the rate reference (``rates``: a PD
    servo tracking position and velocity, as a simulator's position and velocity
    actuators).

    Args:
        motion: t -> (q, q_dot, q_ddot), e.g. a gait.
        dead_time: T_d [s] per joint.
        rates: give the gait's q_dot as the rate reference too.
    """

    def __init__(self, motion: Motion, dead_time: ArrayLike, rates: bool = False) -> None:
        self.motion = motion
        self.dead_time = np.asarray(dead_time, dtype=float)
        self.rates = rates

    def inputs(self, t: FloatArray) -> FloatArray:
        n = self.dead_time.size
        out = np.zeros((t.size, 3 * n))
        for delay in np.unique(self.dead_time):
            joints = np.flatnonzero(self.dead_time == delay)
            q, qd = self._late(np.asarray(t, dtype=np.float64) - delay)
            out[:, n + joints] = q[:, joints]
            if self.rates:
                out[:, 2 * n + joints] = qd[:, joints]
        return out

    def _late(self, times: FloatArray) -> tuple[FloatArray, FloatArray]:
        """q [rad] and q_dot [rad/s] of the motion at ``times`` [s], shape (len(times), n);
        a :class:`PeriodicGait` (the crawls' serpenoids) in one call
        (:func:`motion_samples`), without the Python call per RK4 stage time that cost a
        servo crawl a third of its time."""
        q, qd, _ = motion_samples(self.motion, times)
        return np.asarray(q), np.asarray(qd)


class TorqueInput(InputSource):
    """Torque mode: the latest commanded torques, held until older than ``timeout`` [s],
    then zero.
    """

    def __init__(self, n_joints: int, timeout: float) -> None:
        self.timeout = _timeout(timeout)
        self._t = -math.inf
        self._tau = np.zeros(n_joints)

    def push(self, t: float, tau: FloatArray) -> None:
        """Apply the torques ``tau`` [N m] commanded at time t [s] (from now on)."""
        self._t, self._tau = t, np.array(tau, dtype=np.float64)

    def inputs(self, t: FloatArray) -> FloatArray:
        live = (np.asarray(t, dtype=np.float64) - self._t <= self.timeout)[:, None]
        tau = np.where(live, self._tau, 0.0)
        return np.ascontiguousarray(np.hstack([tau, np.zeros_like(tau), np.zeros_like(tau)]))


# --------------------------------------------------------------------------- simulator
@dataclass(frozen=True)
class RunReport:
    """What one :meth:`Simulator.run_until` did.

    Attributes:
        steps: RK4 steps taken.
        skipped: simulated time skipped because more than ``max_steps`` were due [s].
        q: joint angles at the end of every step taken [rad], shape (steps, n).
        qd: joint rates at the end of every step taken [rad/s], shape (steps, n).
    """

    steps: int
    skipped: float
    q: FloatArray
    qd: FloatArray


def reset_state(t: float, q: ArrayLike, qd: ArrayLike, n: int) -> tuple[FloatArray, FloatArray]:
    """q and q_dot of a restart as float arrays of n joints.

    Raises:
        StateError: q or q_dot of the wrong shape, or q, q_dot or t not finite.
    """
    q_arr = np.array(q, dtype=np.float64)
    qd_arr = np.array(qd, dtype=np.float64)
    if q_arr.shape != (n,) or qd_arr.shape != (n,):
        raise StateError(f"q and qd must have shape ({n},), got {q_arr.shape}, {qd_arr.shape}")
    if not (np.all(np.isfinite(q_arr)) and np.all(np.isfinite(qd_arr)) and math.isfinite(t)):
        raise StateError("reset state and time must be finite")
    return q_arr, qd_arr


class Simulator:
    """RK4 integration of eq. (84) under position servos, advanced step batch by step batch.

    Matches :func:`integrators.simulate` with ``servo=Servo(stiffness, damping, ...)`` (or
    ``Servo.of(servo, ...)``) and a step of ``dt / substeps``, step for step, when given the
    same inputs; zero gains give pure feed-forward (the paper's open-loop replay, unstable
    for fast gaits of long snakes).

    Args:
        model: the snake.
        dt: RK4 step [s].
        stiffness: PD servo k_p [N m/rad], scalar or per joint.
        damping: PD servo k_d [N m s/rad], scalar or per joint.
        servo: the servo model instead of the PD gains (its dead times are applied by the
            input source, see :class:`PrescribedInput`).
        t0: start time [s].

    Each step of ``dt`` is :attr:`substeps` RK4 steps (:func:`stable_substeps`: one unless
    the servos' damping on light links makes the system too stiff for RK4 at ``dt``).

    Raises:
        SimulationError: bad step, gains or servo model.
    """

    def __init__(
        self,
        model: SnakeModel,
        dt: float,
        *,
        stiffness: ArrayLike = 0.0,
        damping: ArrayLike = 0.0,
        servo: ServoModel | None = None,
        t0: float = 0.0,
    ) -> None:
        self._bind(model)
        check_step(dt)
        n = model.n_joints
        self.model = model
        self.fast_model = recursive.FastModel(model)
        self.dt = dt
        self.servo = servo_model(stiffness, damping, servo, n)
        self.substeps = self._substeps()
        self._h = dt / self.substeps  # the RK4 step [s]
        self._offsets: tuple[int, FloatArray] = (-1, np.empty(0))  # stage_times' last
        self._packed = self.servo.packed  # the servo law's parameters, compiled form (241)
        self._pack()
        self.reset(t0, np.zeros(n), np.zeros(n))

    def _bind(self, model: SnakeModel) -> None:
        """Check that this simulator can run ``model``, and derive what it needs of it before
        anything else (here: nothing; a subclass raises ModelError for a robot it cannot
        run)."""

    def _substeps(self) -> int:
        """RK4 steps per ``dt`` for this model and servo (:func:`stable_substeps`)."""
        return stable_substeps(self.model, self.servo, self.dt)

    def _pack(self) -> None:
        """The arrays the compiled steps take, once :attr:`substeps` is known."""
        self._params: recursive.ServoParams = (self.fast_model.params, self._packed)
        self._u = np.zeros(3 * self.model.n_joints)

    @property
    def time(self) -> float:
        """The time of the current state [s]."""
        return self._t0 + self._count * self.dt

    @property
    def q(self) -> FloatArray:
        """Joint angles [rad], shape (n,)."""
        return self._q

    @property
    def qd(self) -> FloatArray:
        """Joint rates [rad/s], shape (n,)."""
        return self._qd

    @property
    def tau(self) -> FloatArray:
        """The torques applied at the current state by the servo model [N m], shape (n,)
        (eq. 241)."""
        return np.asarray(recursive.servo_torque(self._packed, self._u, self._q, self._qd))

    def reset(self, t: float, q: ArrayLike, qd: ArrayLike) -> None:
        """Restart from angles q [rad] and rates q_dot [rad/s] at time t [s].

        Raises:
            StateError: q or q_dot of the wrong shape or not finite.
        """
        n = self.model.n_joints
        q_arr, qd_arr = reset_state(t, q, qd, n)
        self._t0, self._count = float(t), 0
        self._q, self._qd = q_arr, qd_arr
        self._u = np.concatenate([np.zeros(n), q_arr, qd_arr])

    def stage_times(self, steps: int) -> FloatArray:
        """The RK4 stage times t, t + h/2, ..., t + steps dt of the next steps, with
        h = dt / substeps [s]: the offsets h/2 j [s] kept for the last step count (the node
        asks for the same count tick after tick), plus the time."""
        if self._offsets[0] != steps:
            count = 2 * steps * self.substeps + 1
            self._offsets = (steps, 0.5 * self._h * np.arange(count, dtype=np.float64))
        return self.time + self._offsets[1]

    def advance(self, steps: int, source: InputSource) -> tuple[FloatArray, FloatArray]:
        """Take ``steps`` steps with the inputs of ``source`` at the stage times.

        Returns:
            q [rad] and q_dot [rad/s] at the end of every step, shape (steps, n) each.

        Raises:
            SimulationError: the state left the finite numbers; the simulator keeps the
                last finite state and its time.
        """
        n, sub = self.model.n_joints, self.substeps
        if steps <= 0:
            return np.empty((0, n)), np.empty((0, n))
        inputs = source.inputs(self.stage_times(steps))
        rows = 2 * steps * sub + 1
        if inputs.shape != (rows, 3 * n):
            raise SimulationError(f"inputs must have shape ({rows}, {3 * n})")
        qs, qds, qdds = (np.empty((steps * sub, n)) for _ in range(3))
        recursive.rk4_servo_steps(
            self._params, self._q, self._qd, inputs, self._h, qs, qds, qdds, np.empty((0, 2))
        )
        qs, qds = qs[sub - 1 :: sub], qds[sub - 1 :: sub]  # at the ends of the steps
        done = finite_rows(qs, qds)
        if done > 0:
            self._q, self._qd = qs[done - 1].copy(), qds[done - 1].copy()
            self._u = inputs[2 * done * sub]
            self._count += done
        if done < steps:
            raise SimulationError(
                f"the state left the finite numbers at t = {self.time + self.dt:.6g} s "
                "(torques too large for the model: check the commands and servo gains)"
            )
        return qs, qds

    def run_until(self, t: float, source: InputSource, max_steps: int) -> RunReport:
        """Advance to the last step boundary at or before time t [s].

        If more than ``max_steps`` steps are due (the caller fell behind), the earlier
        ones are skipped: the state is held while the clock jumps, so the simulation
        stays aligned with t.
        """
        due = math.floor((t - self.time) / self.dt + 1e-9)
        skipped = 0
        if due > max_steps:
            skipped = due - max_steps
            self._count += skipped
            due = max_steps
        qs, qds = self.advance(due, source)
        return RunReport(max(due, 0), skipped * self.dt, qs, qds)

    def warm_up(self) -> None:
        """Compile this module's kernels now (seconds on the first use after an install, then
        loaded from numba's cache), not in the middle of a run.
        """
        n = self.model.n_joints
        zero = np.zeros(n)
        out = np.empty((1, n))
        recursive.rk4_servo_steps(
            self._params, zero, zero, np.zeros((3, 3 * n)), self.dt, out, out, out, np.empty((0, 2))
        )
        recursive.servo_torque(self._params[1], np.zeros(3 * n), zero, zero)  # tau
        self.fast_model.inverse_dynamics(zero, zero, zero)
        reference = CommandReference(zero, timeout=1.0)
        for t in (0.0, 1.0):
            reference.push(t, zero, zero)
        reference.evaluate(np.array([0.5]))
        PrescribedInput(self.fast_model, reference, feed_forward=False).inputs(np.array([0.5]))


#: How far out the largest eigenvalue of the linearised system may reach, times the RK4
#: step, where it is taken at the straight pose alone (the wheeled snake, eq. 417): RK4 is
#: stable to |z| = 2.78 on the negative real axis and 2.83 on the imaginary one; the margin
#: covers M*(q) away from the straight pose and the omitted velocity terms.
RK4_REACH = 2.0
#: The same where the servos' fastest mode is searched over poses (:func:`stable_substeps`,
#: :func:`snake_dynamics.sim.crawler.crawling_substeps`): that mode is real (the damping on a
#: light link), and the margin to 2.78 covers poses between the samples and the velocity
#: terms the linearisation leaves out.
SEARCHED_RK4_REACH = 2.5
#: Bent poses the step counts search, drawn (seeded) within the joints' limits.
REACH_POSES = 64


def reach_poses(model: SnakeModel) -> FloatArray:
    """The straight pose and :data:`REACH_POSES` bent ones [rad], shape (1 + REACH_POSES, n),
    drawn uniformly (seed 0) within the joints' limits, +-90 deg where the robot file sets
    none."""
    n = model.n_joints
    limits = np.asarray(model.joint_limits, dtype=float)
    if limits.shape != (n, 2):
        limits = np.tile([-0.5 * math.pi, 0.5 * math.pi], (n, 1))
    bent = np.random.default_rng(0).uniform(limits[:, 0], limits[:, 1], (REACH_POSES, n))
    return np.vstack([np.zeros(n), bent])


def servo_reach(model: SnakeModel, servo: ServoModel, q: ArrayLike) -> float:
    """The servos' fastest mode on the fixed tail at pose ``q`` [rad], at rest: the largest
    |lambda| [1/s] of M*(q) q_ddot = -K q - D q_dot (eqs. 82, 203), linearised there."""
    n = model.n_joints
    minv = np.linalg.inv(recursive.mass_matrix(model, np.asarray(q, dtype=float)))
    stiffness, damping = servo.packed[0], servo.packed[1]
    system = np.block([[np.zeros((n, n)), np.eye(n)], [-minv * stiffness, -minv * damping]])
    return float(np.max(np.abs(np.linalg.eigvals(system))))


#: The searched reaches [1/s] by (pickled key, pose): the search costs 10-40 ms, and a fit
#: builds a simulator of one body for every prediction.
_REACHES: dict[tuple[bytes, bytes], float] = {}


def searched_substeps(
    reach: Callable[[FloatArray], float], model: SnakeModel, dt: float, key: object
) -> int:
    """RK4 steps per ``dt`` [s] that keep |lambda| h <= :data:`SEARCHED_RK4_REACH` for the
    fastest mode ``reach(q)`` [1/s] over :func:`reach_poses`; at least 1.

    ``key``: all that ``reach`` depends on besides the pose (picklable); each pose's reach is
    computed once per key.
    """
    tag = pickle.dumps(key)
    if len(_REACHES) > 64 * (REACH_POSES + 1):
        _REACHES.clear()
    fastest = 0.0
    for q in reach_poses(model):
        pose = (tag, q.tobytes())
        if pose not in _REACHES:
            _REACHES[pose] = reach(q)
        fastest = max(fastest, _REACHES[pose])
    return max(1, math.ceil(fastest * dt / SEARCHED_RK4_REACH))


def stable_substeps(model: SnakeModel, servo: ServoModel, dt: float) -> int:
    """How many RK4 steps a step of ``dt`` [s] needs to stay stable under the servos.

    The servos' loop at rest, M*(q) q_ddot = -K q - D q_dot (eqs. 82, 203), has eigenvalues
    lambda that set RK4's stability: |lambda| h <= :data:`SEARCHED_RK4_REACH`, at the
    fastest over :func:`reach_poses` (:func:`servo_reach`). The damping on light links
    (small eigenvalues of M*) is what makes it stiff.

    Returns:
        The number of RK4 steps per ``dt``, at least 1.
    """
    return searched_substeps(
        lambda q: servo_reach(model, servo, q), model, dt, ("fixed tail", model, servo.packed[:2])
    )


def warm_up() -> None:
    """Compile the core's numba kernels now, the floating base's too
    (:mod:`snake_dynamics.floating.recursive`); later processes load them from numba's cache."""
    floating_warm_up()
    model = SnakeModel.uniform(2, 0.1, 0.1, 0.02)
    Simulator(model, 0.001, stiffness=1.0).warm_up()
    simulate(model, np.zeros(2), np.zeros(2), None, 0.002, 0.001)
    recursive.mass_matrix(model, np.zeros(2))
    recursive.bias_forces(model, np.zeros(2), np.zeros(2))
    recursive.forward_dynamics(model, np.zeros(2), np.zeros(2), np.zeros(2))

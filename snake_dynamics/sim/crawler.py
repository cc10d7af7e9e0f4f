"""Servos on a free body: the floating-base snake on its ground driven by the servo model's
torques, one integration for the joints and the base (docs/mfm.md, "Servos on a free body",
eqs. 240-242).

The state is y = [x_0; quat_0; v_0; w_0; q; q_dot] (eq. 240): the tail's CM [m] in the
inertial frame, its orientation (x, y, z, w), its velocity and angular velocity in its own
frame (eq. 221's nu) and the joints. Its rate is the floating-base articulated-body
recursion (eq. 227, :func:`snake_dynamics.floating.aba.forward_dynamics_on_ground`)
under gravity, the ground's contact and friction (eqs. 231-236) and the servo torques
(eqs. 202-206) at the joints, all compiled and O(n). Nothing holds a body up but the ground
and the servos: the pitch servos carry the links they lift, a body may leave the ground,
and the ground's reaction loads the servos.

:class:`CrawlingSimulator` has :class:`snake_dynamics.sim.simulator.Simulator`'s interface
(the dynamics node's and the emulated plant's simulator for such a robot) plus the base's
state; :func:`simulate_crawling` is ``snake simulate``'s and ``snake sweep``'s run.
Prescribed joints (:func:`snake_dynamics.floating.recursive.simulate_prescribed_fast`) stay
the ideal-servo limit: stiff, fast servos converge to them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError, SimulationError
from snake_dynamics.floating import (
    FastFloatingModel,
    FloatingParams,
    FloatingRun,
    FloatingState,
    FloatingWorkspace,
    check_step,
    floating_mass_matrix,
    floating_workspace,
    forward_dynamics_on_ground,
    lying_state,
    mass_centre_and_heading,
    momentum_free_base_velocity,
    quaternion_matrix,
    quaternion_rate,
    world_poses,
)
from snake_dynamics.ground import Ground, contact_points, stable_step
from snake_dynamics.jit import compiled
from snake_dynamics.mfm import recursive
from snake_dynamics.mfm.recursive import servo_torque_into
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.simulator import (
    InputSource,
    Motion,
    MotionInput,
    Simulator,
    finite_rows,
    reset_state,
    searched_substeps,
)

FloatArray = NDArray[np.float64]

#: Entries of y before the joints: x_0 (3), quat_0 (4), v_0 (3), w_0 (3).
BASE = 13


@compiled
def scratch_size(n: int) -> int:
    """The length of :func:`_rate_into`'s work space for n joints: 3n + 25."""
    return 3 * n + 25


@compiled
def _rate_into(
    params: FloatingParams,
    ground: FloatArray,
    servo: FloatArray,
    y: FloatArray,
    u: FloatArray,
    work: FloatingWorkspace,
    scratch: FloatArray,
    out: FloatArray,
) -> None:
    """y_dot of eq. (240) into ``out``; the servo torques (eq. 241) stay in scratch[:n].

    ``scratch``: (3n + 25,) work space (:func:`scratch_size`): tau (n), nu (6+n), nu_dot (6+n),
    R_0 (9), the normalised quaternion (4).
    """
    n = (y.shape[0] - BASE) // 2
    tau = scratch[:n]
    nu = scratch[n : 2 * n + 6]
    nu_dot = scratch[2 * n + 6 : 3 * n + 12]
    rotation = scratch[3 * n + 12 : 3 * n + 21].reshape((3, 3))
    quat = scratch[3 * n + 21 : 3 * n + 25]
    norm = math.sqrt(y[3] * y[3] + y[4] * y[4] + y[5] * y[5] + y[6] * y[6])
    for i in range(4):
        quat[i] = y[3 + i] / norm
    quaternion_matrix(quat, rotation)
    for i in range(6):
        nu[i] = y[7 + i]
    q = y[BASE : BASE + n]
    qd = y[BASE + n :]
    for k in range(n):
        nu[6 + k] = qd[k]
    servo_torque_into(servo, u, q, qd, tau)
    forward_dynamics_on_ground(params, ground, rotation, y[:3], q, nu, tau, work, nu_dot)
    for i in range(3):
        out[i] = rotation[i, 0] * nu[0] + rotation[i, 1] * nu[1] + rotation[i, 2] * nu[2]
    quaternion_rate(quat, nu, out[3:7])
    for i in range(6):
        out[7 + i] = nu_dot[i]
    for k in range(n):
        out[BASE + k] = qd[k]
        out[BASE + n + k] = nu_dot[6 + k]


@compiled
def crawl_rate(
    params: FloatingParams, ground: FloatArray, servo: FloatArray, y: FloatArray, u: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """y_dot of the servo-driven snake on the ground (eq. 240) and the servo torques
    (eq. 241) [N m].

    Args:
        params: the model's arrays (:class:`FastFloatingModel`).
        ground: :func:`snake_dynamics.ground.kernel.ground_parameters`.
        servo: the packed servo parameters (:attr:`ServoModel.packed`), (5, n).
        y: [x_0 m; quat_0 (x, y, z, w); v_0 m/s; w_0 rad/s (tail frame); q rad; q_dot rad/s].
        u: the servo inputs [tau_ff; q_ref; q_dot_ref], (3n,).
    """
    n = (y.shape[0] - BASE) // 2
    out = np.empty(y.shape[0])
    scratch = np.empty(scratch_size(n))
    _rate_into(params, ground, servo, y, u, floating_workspace(n), scratch, out)
    return out, scratch[:n].copy()


@compiled
def _crawl_steps(
    params: FloatingParams,
    ground: FloatArray,
    servo: FloatArray,
    y: FloatArray,
    inputs: FloatArray,
    h: float,
    sub: int,
    states: FloatArray,
) -> None:
    """RK4 steps of eq. (240) from ``y``, ``sub`` of length h per step, the inputs at the
    stage times (rows 2i, 2i+1, 2i+2 for RK4 step i); the quaternion renormalised after
    every RK4 step (eq. 230). The state at the end of every step into ``states``.

    Compiled with fastmath: NaN and inf are not detected here (LLVM may drop the test);
    the caller checks the rows.
    """
    n = (y.shape[0] - BASE) // 2
    work = floating_workspace(n)
    scratch = np.empty(scratch_size(n))
    k1, k2, k3, k4 = np.empty(y.size), np.empty(y.size), np.empty(y.size), np.empty(y.size)
    stage = np.empty(y.size)
    x = y.copy()
    half, sixth = 0.5 * h, h / 6.0
    for i in range(states.shape[0]):
        for j in range(sub):
            row = 2 * (i * sub + j)
            # the stages element by element: no temporary array per stage
            _rate_into(params, ground, servo, x, inputs[row], work, scratch, k1)
            for c in range(x.size):
                stage[c] = x[c] + half * k1[c]
            _rate_into(params, ground, servo, stage, inputs[row + 1], work, scratch, k2)
            for c in range(x.size):
                stage[c] = x[c] + half * k2[c]
            _rate_into(params, ground, servo, stage, inputs[row + 1], work, scratch, k3)
            for c in range(x.size):
                stage[c] = x[c] + h * k3[c]
            _rate_into(params, ground, servo, stage, inputs[row + 2], work, scratch, k4)
            for c in range(x.size):
                x[c] += sixth * (k1[c] + 2.0 * k2[c] + 2.0 * k3[c] + k4[c])
            norm = math.sqrt(x[3] * x[3] + x[4] * x[4] + x[5] * x[5] + x[6] * x[6])
            for c in range(3, 7):
                x[c] /= norm
        states[i] = x


@compiled
def _crawl_batches(
    params: FloatingParams,
    ground: FloatArray,
    servo: FloatArray,
    y: FloatArray,
    inputs: FloatArray,
    h: float,
    sub: int,
    states: FloatArray,
) -> None:
    """:func:`_crawl_steps` batch after batch, each from the last state of the one before (as
    one call per batch): ``inputs`` (batches, 2 steps sub + 1, 3n), ``states`` (batches,
    steps, 13 + 2n). Fastmath as :func:`_crawl_steps`: the caller checks the rows."""
    last = states.shape[1] - 1
    _crawl_steps(params, ground, servo, y, inputs[0], h, sub, states[0])
    for b in range(1, inputs.shape[0]):
        _crawl_steps(params, ground, servo, states[b - 1, last], inputs[b], h, sub, states[b])


#: Batches of :meth:`CrawlingSimulator.run_batches` per call in :func:`simulate_crawling`.
BATCHES = 100


def crawling_reach(model: SnakeModel, servo: ServoModel, q: ArrayLike) -> float:
    """The servos' fastest mode at pose ``q`` [rad] with the snake at rest and its base
    free: the largest |lambda| [1/s] of the loop linearised there, M*(q) nu_dot =
    -Sᵀ (K S q + D S nu), S the joints' rows of nu (eqs. 203, 227; eq. 242's matrix)."""
    n = model.n_joints
    minv = np.linalg.inv(floating_mass_matrix(model, np.eye(3), np.asarray(q, float)))[:, 6:]
    stiffness, damping = servo.packed[0], servo.packed[1]
    zero = np.zeros((6 + n, 6))
    system = np.block(
        [
            [np.zeros((6 + n, 6 + n)), np.eye(6 + n)],
            [zero, -minv * stiffness, zero, -minv * damping],
        ]
    )
    return float(np.max(np.abs(np.linalg.eigvals(system))))


def crawling_substeps(model: SnakeModel, servo: ServoModel, dt: float) -> int:
    """RK4 steps per ``dt`` [s] for the servos on a free body on the ground (eq. 242).

    The servos' fastest mode (:func:`crawling_reach`), at its largest over
    :func:`simulator.reach_poses`, must keep |lambda| h <= :data:`SEARCHED_RK4_REACH`, and h
    must keep within the ground's bound (eq. 237).

    Returns:
        The number of RK4 steps per ``dt``, at least 1.
    """
    # a fit predicts many crawls of one body on different floors, which the reach does not see
    body = dataclasses.replace(model, ground=None)
    count = searched_substeps(
        lambda q: crawling_reach(model, servo, q), model, dt, ("crawling", body, servo.packed[:2])
    )
    if model.ground is not None:
        bound = stable_step(model.ground, model.masses, float(np.linalg.norm(model.gravity)))
        count = max(count, math.ceil(dt / bound - 1e-9))
    return count


class CrawlingSimulator(Simulator):
    """:class:`simulator.Simulator`'s interface for a snake on its ground under its servos:
    the base and the joints from one RK4 integration of eq. (240), ``dt`` split into
    :func:`crawling_substeps` steps.

    Starts lying straight along e2 at rest (:func:`floating.lying_state`). :meth:`reset`
    sets the joints and keeps or replaces the base.

    Args:
        model: a robot with ``base: floating`` and a ``ground`` (not wheels); gravity acts
            as the model gives it.
        dt: step [s].
        stiffness: PD servo k_p [N m/rad] (without ``servo``).
        damping: PD servo k_d [N m s/rad] (without ``servo``).
        servo: the servo model (its dead times are applied by the input source).
        t0: start time [s].

    Raises:
        ModelError: a robot without a floating base on a friction ground.
        SimulationError: bad step, gains or servo model.
    """

    def _bind(self, model: SnakeModel) -> None:
        if model.base != "floating" or model.ground is None or model.wheels:
            raise ModelError(
                f"{model.name} does not crawl: the servo-driven ground model needs base: "
                "floating and a ground: section (not wheels) in its robot file"
            )

    def _substeps(self) -> int:
        return crawling_substeps(self.model, self.servo, self.dt)

    def _pack(self) -> None:
        model = self.model
        check_step(self._h, model)
        self.floating = FastFloatingModel(model)
        lying = lying_state(model)
        self._y = np.concatenate(
            [lying.position, lying.quaternion, np.zeros(6 + 2 * model.n_joints)]
        )

    # ------------------------------------------------------------------ state
    def reset(
        self, t: float, q: ArrayLike, qd: ArrayLike, base: FloatingState | None = None
    ) -> None:
        """Restart at time t [s] from joint angles q [rad] and rates qd [rad/s].

        Args:
            t: time [s].
            q: joint angles [rad], (n,).
            qd: joint rates [rad/s], (n,).
            base: the tail's pose and velocity to take (its position, quaternion and
                nu[:6]); None: keep the tail's pose, at rest.

        Raises:
            StateError: q or q_dot of the wrong shape or not finite.
        """
        n = self.model.n_joints
        q_arr, qd_arr = reset_state(t, q, qd, n)
        if base is None:
            self._y[7:BASE] = 0.0
        else:
            self._y[:3] = base.position
            self._y[3:7] = np.asarray(base.quaternion) / np.linalg.norm(base.quaternion)
            self._y[7:BASE] = base.nu[:6]
        self._y[BASE : BASE + n] = q_arr
        self._y[BASE + n :] = qd_arr
        self._t0, self._count = float(t), 0
        self._q, self._qd = q_arr, qd_arr
        self._u = np.concatenate([np.zeros(n), q_arr, np.zeros(n)])

    @property
    def y(self) -> FloatArray:
        """The state of eq. (240) (a copy)."""
        return self._y.copy()

    def resting_base(self, q: ArrayLike) -> FloatingState:
        """The tail where it is, at rest, raised or lowered so that the body posed ``q``
        [rad] rests on the ground: its lowest contact point (eq. 231) at z = 0. What a
        restart to another pose takes (dynamics_node's first command): keeping the height
        would sink a bent body into the floor, or leave it to fall.

        Raises:
            StateError: q of the wrong shape or not finite.
        """
        n = self.model.n_joints
        q_arr, _ = reset_state(self.time, q, np.zeros(n), n)
        posed = FloatingState(self._y[:3].copy(), self._y[3:7].copy(), q_arr, np.zeros(6 + n))
        rotations, centres = world_poses(self.model, posed)
        assert self.model.ground is not None  # a crawler's model has one (__init__)
        points = contact_points(
            self.model.lengths,
            self.model.radii,
            rotations,
            centres,
            self.model.ground.contacts,
            self.model.ground.width,
        )
        posed.position[2] -= float(np.min(points[..., 2]))
        return posed

    @property
    def base_state(self) -> FloatingState:
        """The tail's pose and velocity with the joints, as a floating base's state."""
        y = self._y
        return FloatingState(
            y[:3].copy(), y[3:7].copy(), self._q.copy(), np.concatenate([y[7:BASE], self._qd])
        )

    @property
    def centre_of_mass(self) -> FloatArray:
        """The snake's CM [m], shape (3,)."""
        com, _ = self.centre_and_heading()
        return com

    def centre_and_heading(self) -> tuple[FloatArray, float]:
        """The snake's CM [m], (3,), and its heading [rad] (the direction of sum_b R_b e2 in
        the plane, eq. 238's)."""
        y = self._y
        com, heading = mass_centre_and_heading(
            self.floating.params, y[None, :3].copy(), y[None, 3:7].copy(), self._q[None, :].copy()
        )
        return com[0], float(heading[0])

    # ------------------------------------------------------------------ stepping
    def advance(self, steps: int, source: InputSource) -> tuple[FloatArray, FloatArray]:
        """Take ``steps`` steps with the inputs of ``source`` at the stage times.

        Returns:
            q [rad] and q_dot [rad/s] at the end of every step, shape (steps, n) each.

        Raises:
            SimulationError: the state left the finite numbers; the simulator keeps the
                last finite state and its time.
        """
        n = self.model.n_joints
        states = self.run(steps, source)
        return states[:, BASE : BASE + n], states[:, BASE + n :]

    def run(self, steps: int, source: InputSource) -> FloatArray:
        """:meth:`advance`, returning the whole state of eq. (240) at the end of every step,
        shape (steps, 13 + 2n).

        Raises:
            SimulationError: as :meth:`advance`.
        """
        n, sub = self.model.n_joints, self.substeps
        if steps <= 0:
            return np.empty((0, self._y.size))
        inputs = source.inputs(self.stage_times(steps))
        rows = 2 * steps * sub + 1
        if inputs.shape != (rows, 3 * n):
            raise SimulationError(f"inputs must have shape ({rows}, {3 * n})")
        states = np.empty((steps, self._y.size))
        _crawl_steps(
            self.floating.params, self.floating.ground, self._packed, self._y, inputs, self._h,
            sub, states,
        )  # fmt: skip
        done = finite_rows(states)
        if done > 0:
            y = states[done - 1].copy()
            self._y = y
            self._count += done
            self._u = inputs[2 * done * sub]
            self._q, self._qd = y[BASE : BASE + n].copy(), y[BASE + n :].copy()
        if done < steps:
            raise SimulationError(
                f"the state left the finite numbers at t = {self.time + self.dt:.6g} s "
                "(torques too large for the model: check the commands and servo gains)"
            )
        return states

    def run_batches(
        self, batches: int, steps: int, source: MotionInput
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``batches`` calls of :meth:`run` of ``steps`` steps each, in one: each batch's
        stage times from its own start time as :meth:`run` takes them, the inputs of all of
        them sampled at once (a :class:`MotionInput` depends on the time alone) and one
        compiled call, so the states are those of the separate calls, bit for bit.

        Returns:
            Per batch: the time at its end [s], (batches,), the state of eq. (240) there,
            (batches, 13 + 2n), and the servos' inputs there (what :attr:`tau` sees),
            (batches, 3n).

        Raises:
            SimulationError: as :meth:`advance`.
        """
        n, sub = self.model.n_joints, self.substeps
        rows = 2 * steps * sub + 1
        counts = self._count + steps * np.arange(batches + 1)
        starts = np.asarray(self._t0 + counts * self.dt, dtype=np.float64)
        times = starts[:-1, None] + 0.5 * self._h * np.arange(rows, dtype=np.float64)
        inputs = source.inputs(times.ravel())
        if inputs.shape != (batches * rows, 3 * n):
            raise SimulationError(f"inputs must have shape ({batches * rows}, {3 * n})")
        inputs = inputs.reshape(batches, rows, 3 * n)
        states = np.empty((batches, steps, self._y.size))
        _crawl_batches(
            self.floating.params, self.floating.ground, self._packed, self._y, inputs, self._h,
            sub, states,
        )  # fmt: skip
        every_state = states.reshape(batches * steps, self._y.size)
        done = finite_rows(every_state)
        if done > 0:
            batch, step = divmod(done - 1, steps)
            y = every_state[done - 1].copy()
            self._y = y
            self._count += done
            self._u = inputs[batch, 2 * (step + 1) * sub]
            self._q, self._qd = y[BASE : BASE + n].copy(), y[BASE + n :].copy()
        if done < batches * steps:
            raise SimulationError(
                f"the state left the finite numbers at t = {self.time + self.dt:.6g} s "
                "(torques too large for the model: check the commands and servo gains)"
            )
        return starts[1:], states[:, -1].copy(), inputs[:, -1].copy()

    def warm_up(self) -> None:
        """Compile the kernels now (numba's cache), not in the middle of a run."""
        n = self.model.n_joints
        recursive.servo_torque(self._packed, np.zeros(3 * n), np.zeros(n), np.zeros(n))
        crawl_rate(self.floating.params, self.floating.ground, self._packed, self._y, self._u)
        _crawl_steps(
            self.floating.params, self.floating.ground, self._packed, self._y.copy(),
            np.zeros((1, 3 * n)), self._h, 1, np.empty((0, self._y.size)),
        )  # fmt: skip
        _crawl_batches(
            self.floating.params, self.floating.ground, self._packed, self._y.copy(),
            np.zeros((1, 1, 3 * n)), self._h, 1, np.empty((1, 0, self._y.size)),
        )  # fmt: skip


def simulate_crawling(
    model: SnakeModel,
    motion: Motion,
    t_end: float,
    dt: float,
    servo: ServoModel,
    every: int = 1,
    progress: Callable[[float], None] | None = None,
    source: InputSource | None = None,
    start: FloatingState | None = None,
) -> FloatingRun:
    """A snake on its ground following ``motion`` with its servos (eq. 240), sampled as a
    floating base's run; the twin of
    :func:`snake_dynamics.floating.recursive.simulate_prescribed_fast`, which it approaches
    as the servos grow stiff and fast.

    The run starts at ``start``'s pose (default: lying along e2,
    :func:`floating.lying_state`) with the joints at motion(0), the base at the velocity
    that leaves the snake's momentum zero (:func:`floating.momentum_free_base_velocity`).

    Args:
        model: a robot with ``base: floating`` and a ground.
        motion: t -> (q, q_dot, q_ddot), the servos' reference (a hobby servo's: the angle,
            each servo seeing it its dead time late; :class:`MotionInput`).
        t_end: duration [s].
        dt: step [s].
        servo: the servos.
        every: keep every ``every``-th step.
        progress: called with the fraction done.
        source: the servos' inputs instead of ``motion``'s angles (e.g. with rate
            references or feed-forward).
        start: the tail's initial pose (its position and quaternion; the rest is set as
            above).

    Returns:
        The run; its ``tau`` are the servo torques (eq. 241).

    Raises:
        ModelError: a robot that does not crawl (see :class:`CrawlingSimulator`).
        SimulationError: bad step, or the state left the finite numbers.
    """
    sim = CrawlingSimulator(model, dt, servo=servo)
    sim.warm_up()
    q0, qd0, _ = (np.asarray(x, dtype=float) for x in motion(0.0))
    pose = sim.base_state if start is None else start
    base = momentum_free_base_velocity(model, pose.rotation, q0, qd0)
    sim.reset(0.0, q0, qd0, pose._replace(nu=np.concatenate([base, qd0])))
    inputs = MotionInput(motion, sim.servo.dead_times) if source is None else source
    steps, n = round(t_end / dt), model.n_joints
    # the kept states of eq. (240) as rows, their times and torques, in blocks
    times, ys, taus = [np.array([sim.time])], [sim.y[None]], [sim.tau[None]]
    done = 0
    while isinstance(inputs, MotionInput) and steps - done >= every:
        batches = min(BATCHES, (steps - done) // every)
        ends, y_ends, us = sim.run_batches(batches, every, inputs)
        qs, qds = y_ends[:, BASE : BASE + n].copy(), y_ends[:, BASE + n :].copy()
        times.append(ends)
        ys.append(y_ends)
        taus.append(recursive.servo_torques(sim.servo.packed, us, qs, qds))
        for _ in range(batches):
            done += every
            if progress is not None:
                progress(done / steps)
    while done < steps:
        batch = min(every, steps - done)
        sim.advance(batch, inputs)
        done += batch
        times.append(np.array([sim.time]))
        ys.append(sim.y[None])
        taus.append(sim.tau[None])
        if progress is not None:
            progress(done / steps)
    y = np.concatenate(ys)
    positions, quaternions = y[:, :3].copy(), y[:, 3:7].copy()
    qs = y[:, BASE : BASE + n].copy()
    com, heading = mass_centre_and_heading(sim.floating.params, positions, quaternions, qs)
    return FloatingRun(
        np.concatenate(times),
        positions,
        quaternions,
        qs,
        np.concatenate([y[:, 7:BASE], y[:, BASE + n :]], axis=1),
        com,
        heading,
        np.concatenate(taus),
    )


def warm_up() -> None:
    """Compile this module's kernels now (numba's cache), not in the middle of a run."""
    model = SnakeModel.uniform(
        2, 0.1, 0.1, 0.02, gravity=(0.0, 0.0, -9.81), base="floating", ground=Ground()
    )
    CrawlingSimulator(model, 0.001, stiffness=1.0, damping=0.01).warm_up()

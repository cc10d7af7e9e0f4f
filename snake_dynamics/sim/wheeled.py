"""A robot on wheels (``ground: wheels``) under its servos: Kane's recursive model of the
wheeled snake (docs/mfm.md eqs. 401-408) driven by the servo model's torques (eqs. 202-206),
the node's and ``snake simulate``'s prediction for such a robot (eqs. 415-417).

The robot's bodies (tail first) are the wheeled snake's links: body b's length, mass and
inertia about its joint axis z become L_k, m_k and I_k, a wheel sits at every CM, and the
servos' torques T_k act at the joints. A wheeled snake has two velocity degrees of freedom
for any number of links, so the joints are not prescribed: they move as the servos' torques
and the wheels let them (eq. 415), and the tail's pose follows (eq. 416).

Frames: the snake starts straight along +y (as :func:`floating.lying_state`), the tail's
CM at the origin, at the height of the thickest body. Body b's long axis y is its link's
e_k, so the tail's yaw is θ_1 - π/2 and its velocity in its own frame is (0, V_1, 0), its
angular velocity (0, 0, ω_1) (eq. 416).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import ModelError, SimulationError
from snake_dynamics.floating import FloatingRun, FloatingState
from snake_dynamics.jit import compiled
from snake_dynamics.mfm import recursive
from snake_dynamics.mfm.recursive import servo_torque_into
from snake_dynamics.model import SnakeModel
from snake_dynamics.planar import (
    WheeledSnake,
    kane_matrices,
    kane_recursion,
    link_positions,
    link_speeds,
)
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.simulator import (
    RK4_REACH,
    InputSource,
    Motion,
    MotionInput,
    Simulator,
    finite_rows,
    reset_state,
)

FloatArray = NDArray[np.float64]


def wheeled_snake(model: SnakeModel) -> WheeledSnake:
    """The wheeled snake of a robot with ``ground: wheels``: its bodies' masses, lengths
    and inertias about z (eq. 415).

    Raises:
        ModelError: a robot without wheels.
    """
    if not model.wheels:
        raise ModelError(f"{model.name} has no wheels: set ground: wheels in its robot file")
    return WheeledSnake(
        np.array(model.masses), np.array(model.lengths), np.array(model.inertias[:, 2, 2])
    )


def wheeled_substeps(snake: WheeledSnake, servo: ServoModel, dt: float) -> int:
    """RK4 steps per ``dt`` [s] for the servos on the wheels (eq. 417).

    About the straight snake at rest the joints move as φ̇ = Δ R u, with R = ∂ω/∂u and Δ
    the differences of neighbours, and M u̇ = -(Δ R)ᵀ (K φ + D φ̇); the eigenvalues λ of
    that linear system set RK4's step, |λ| h <= :data:`simulator.RK4_REACH`.

    Returns:
        ceil(max |λ| dt / RK4_REACH), at least 1.
    """
    n = snake.n
    straight, rest = np.zeros(n), np.zeros(2)
    mass, _, _ = kane_matrices(snake, straight, rest, np.zeros(n - 1))
    joint = np.diff(link_speeds(snake, straight, rest).rate_partials, axis=0)  # Δ R, (n-1, 2)
    stiffness, damping = servo.packed[0], servo.packed[1]
    minv = np.linalg.inv(mass)
    system = np.block(
        [
            [np.zeros((n - 1, n - 1)), joint],
            [-minv @ joint.T * stiffness, -minv @ joint.T @ (damping[:, None] * joint)],
        ]
    )
    reach = float(np.max(np.abs(np.linalg.eigvals(system)))) * dt
    return max(1, math.ceil(reach / RK4_REACH))


class WheeledSimulator(Simulator):
    """:class:`simulator.Simulator`'s interface for a robot on wheels: the joints and the
    tail by Kane's recursive model under the servo model's torques, RK4 at ``dt``
    (substeps from :func:`wheeled_substeps`).

    The state is Kane's reduced state z = [x, y, θ_1..θ_N, V_1, ω_1] of the N = n + 1
    bodies; q = Δθ and q̇ = Δω are the joints'. :meth:`reset` keeps the tail's pose and
    heading, sets the joint angles and takes the wheels' admissible motion closest to the
    joint rates given (least squares: n - 1 > 2 rates cannot all be met).

    Args:
        model: a robot with ``ground: wheels``.
        dt: step [s].
        stiffness: PD servo k_p [N m/rad] (without ``servo``).
        damping: PD servo k_d [N m s/rad] (without ``servo``).
        servo: the servo model (its dead times are applied by the input source).
        t0: start time [s].

    Raises:
        ModelError: a robot without wheels.
        SimulationError: bad step, gains or servo model.
    """

    def _bind(self, model: SnakeModel) -> None:
        self.snake = wheeled_snake(model)

    def _substeps(self) -> int:
        return wheeled_substeps(self.snake, self.servo, self.dt)

    def _pack(self) -> None:
        k_ = self.snake.constants
        self._constants: tuple[FloatArray, FloatArray, FloatArray, FloatArray] = (
            np.array(k_.half),
            np.array(k_.inverse_half),
            np.array(k_.masses),
            np.array(k_.inertias),
        )
        self._height = float(np.max(self.model.radii))
        n = self.snake.n
        self._z = np.concatenate([[0.0, 0.0], np.full(n, math.pi / 2), [0.0, 0.0]])

    # ------------------------------------------------------------------ state
    def reset(
        self, t: float, q: ArrayLike, qd: ArrayLike, pose: tuple[float, float, float] | None = None
    ) -> None:
        """Restart at time t [s] from joint angles q [rad] and the admissible motion closest
        to the joint rates qd [rad/s], the tail at ``pose`` (x [m], y [m], heading θ_1
        [rad]; None: where it is).

        Raises:
            StateError: q or q_dot of the wrong shape or not finite.
        """
        n = self.snake.n
        q_arr, qd_arr = reset_state(t, q, qd, n - 1)
        if pose is not None:
            self._z[:3] = pose
        theta = self._z[2] + np.concatenate([[0.0], np.cumsum(q_arr)])
        rec = kane_recursion(self.snake.constants, theta.tolist(), (0.0, 0.0), math.cos, math.sin)
        joint = np.diff(np.array(rec[3]), axis=0)
        u = np.linalg.lstsq(joint, qd_arr, rcond=None)[0]
        self._z = np.concatenate([self._z[:2], theta, u])
        self._t0, self._count = float(t), 0
        self._set_joints()
        self._u = np.concatenate([np.zeros(n - 1), self._q, np.zeros(n - 1)])

    def _set_joints(self) -> None:
        """q = Δθ and q̇ = Δω of the state (eq. 415)."""
        n, z = self.snake.n, self._z
        rec = kane_recursion(
            self.snake.constants, z[2 : n + 2].tolist(), (z[n + 2], z[n + 3]), math.cos, math.sin
        )
        self._q = np.diff(z[2 : n + 2])
        self._qd = np.diff(np.array(rec[1]))

    @property
    def z(self) -> FloatArray:
        """Kane's reduced state [x, y, θ_1..θ_N, V_1, ω_1] (a copy)."""
        return self._z.copy()

    @property
    def base_state(self) -> FloatingState:
        """The tail's pose and velocity as a floating base's state (eq. 416)."""
        n = self.snake.n
        x, y, heading = self._z[0], self._z[1], self._z[2]
        yaw = heading - math.pi / 2
        quaternion = np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])
        v1, w1 = self._z[n + 2], self._z[n + 3]
        nu = np.concatenate([[0.0, v1, 0.0, 0.0, 0.0, w1], self._qd])
        return FloatingState(np.array([x, y, self._height]), quaternion, self._q.copy(), nu)

    @property
    def centre_of_mass(self) -> FloatArray:
        """The snake's CM [m], shape (3,)."""
        n = self.snake.n
        q = np.concatenate([self._z[2 : n + 2], self._z[:2]])
        r = link_positions(self.snake, q)
        xy = self.snake.masses @ r / self.snake.masses.sum()
        return np.array([xy[0], xy[1], self._height])

    # ------------------------------------------------------------------ stepping
    def advance(self, steps: int, source: InputSource) -> tuple[FloatArray, FloatArray]:
        """Take ``steps`` steps with the inputs of ``source`` at the stage times.

        Returns:
            q [rad] and q_dot [rad/s] at the end of every step, shape (steps, n) each.

        Raises:
            SimulationError: the state left the finite numbers; the simulator keeps the
                last finite state and its time.
        """
        m, sub = self.snake.n - 1, self.substeps
        if steps <= 0:
            return np.empty((0, m)), np.empty((0, m))
        inputs = source.inputs(self.stage_times(steps))
        if inputs.shape != (2 * steps * sub + 1, 3 * m):
            raise SimulationError(f"inputs must have shape ({2 * steps * sub + 1}, {3 * m})")
        states, qs, qds = (
            np.empty((steps, self._z.size)),
            np.empty((steps, m)),
            np.empty((steps, m)),
        )
        _wheeled_steps(
            *self._constants, self._packed, self._z, inputs, self._h, sub, states, qs, qds
        )
        done = finite_rows(states, qs, qds)
        if done > 0:
            self._z = states[done - 1].copy()
            self._count += done
            self._u = inputs[2 * done * sub]
            self._q, self._qd = qs[done - 1].copy(), qds[done - 1].copy()
        if done < steps:
            raise SimulationError(
                f"the state left the finite numbers at t = {self.time + self.dt:.6g} s "
                "(torques too large for the model: check the commands and servo gains)"
            )
        return qs, qds

    def warm_up(self) -> None:
        """Compile the kernels now (numba's cache), not in the middle of a run."""
        m = self.snake.n - 1
        recursive.servo_torque(self._packed, np.zeros(3 * m), np.zeros(m), np.zeros(m))
        wheeled_rate(*self._constants, self._packed, self._z, np.zeros(3 * m))
        empty = np.empty((0, m))
        _wheeled_steps(
            *self._constants, self._packed, self._z, np.zeros((1, 3 * m)), self._h, 1,
            np.empty((0, self._z.size)), empty, empty,
        )  # fmt: skip


@compiled
def _rate_into(
    half: FloatArray,
    inv: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    servo: FloatArray,
    z: FloatArray,
    u: FloatArray,
    out: FloatArray,
) -> None:
    """ż under the servo torques (eq. 415) into ``out``: Kane's recursions (eqs. 403, 404,
    407), the servos (eqs. 202-206) on φ = Δθ, φ̇ = Δω, and M u̇ = F - N ω solved as 2x2
    (eqs. 406, 408); the compiled form of :func:`snake_dynamics.planar.wheeled.kane_rate`."""
    n = masses.size
    v, w = np.empty(n), np.empty(n)
    pv, pw, b = np.empty((n, 2)), np.empty((n, 2)), np.empty((n, 2))  # b: (W_k, Z_k)
    v[0], w[0] = z[n + 2], z[n + 3]
    pv[0, 0], pv[0, 1], pw[0, 0], pw[0, 1], b[0, 0], b[0, 1] = 1.0, 0.0, 0.0, 1.0, 0.0, 0.0
    for k in range(n - 1):
        phi = z[k + 3] - z[k + 2]
        c, s = math.cos(phi), math.sin(phi)
        hc, hs, ik = half[k] * c, half[k] * s, inv[k + 1]
        v[k + 1] = v[k] * c + w[k] * hs
        w[k + 1] = (v[k] * s - w[k] * hc) * ik
        for r in range(2):
            pv[k + 1, r] = pv[k, r] * c + pw[k, r] * hs
            pw[k + 1, r] = (pv[k, r] * s - pw[k, r] * hc) * ik
        phi_dot = w[k + 1] - w[k]
        b[k + 1, 0] = b[k, 0] * c + b[k, 1] * hs + (w[k] * hc - v[k] * s) * phi_dot
        b[k + 1, 1] = (b[k, 0] * s - b[k, 1] * hc + (v[k] * c + w[k] * hs) * phi_dot) * ik
    q, qd, tau = np.empty(n - 1), np.empty(n - 1), np.empty(n - 1)
    for k in range(n - 1):
        q[k] = z[k + 3] - z[k + 2]
        qd[k] = w[k + 1] - w[k]
    servo_torque_into(servo, u, q, qd, tau)
    m00 = m01 = m11 = r0 = r1 = 0.0
    for k in range(n):
        mp0, mp1 = masses[k] * pv[k, 0], masses[k] * pv[k, 1]
        ip0, ip1 = inertias[k] * pw[k, 0], inertias[k] * pw[k, 1]
        m00 += mp0 * pv[k, 0] + ip0 * pw[k, 0]
        m01 += mp0 * pv[k, 1] + ip0 * pw[k, 1]
        m11 += mp1 * pv[k, 1] + ip1 * pw[k, 1]
        r0 -= mp0 * b[k, 0] + ip0 * b[k, 1]
        r1 -= mp1 * b[k, 0] + ip1 * b[k, 1]
    for k in range(n - 1):
        r0 += tau[k] * (pw[k + 1, 0] - pw[k, 0])
        r1 += tau[k] * (pw[k + 1, 1] - pw[k, 1])
    det = m00 * m11 - m01 * m01
    out[0] = v[0] * math.cos(z[2])
    out[1] = v[0] * math.sin(z[2])
    out[2 : n + 2] = w
    out[n + 2] = (m11 * r0 - m01 * r1) / det
    out[n + 3] = (m00 * r1 - m01 * r0) / det


@compiled
def wheeled_rate(
    half: FloatArray,
    inv: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    servo: FloatArray,
    z: FloatArray,
    u: FloatArray,
) -> FloatArray:
    """ż of a robot on wheels under its servos (eq. 415), see :func:`_rate_into`.

    Args:
        half: h_k [m]; inv: 1/h_k [1/m]; masses: m_k [kg]; inertias: I_k [kg m^2], (N,).
        servo: the packed servo parameters (:attr:`ServoModel.packed`), (5, N-1).
        z: Kane's reduced state [x, y, θ_1..θ_N, V_1, ω_1], (N+4,).
        u: the servo inputs [tau_ff; q_ref; q_dot_ref], (3(N-1),).
    """
    out = np.empty(z.size)
    _rate_into(half, inv, masses, inertias, servo, z, u, out)
    return out


@compiled
def _wheeled_steps(
    half: FloatArray,
    inv: FloatArray,
    masses: FloatArray,
    inertias: FloatArray,
    servo: FloatArray,
    z: FloatArray,
    inputs: FloatArray,
    h: float,
    sub: int,
    states: FloatArray,
    qs: FloatArray,
    qds: FloatArray,
) -> None:
    """RK4 steps of eq. 415 from ``z``, ``sub`` of length h per step, the inputs at the
    stage times (rows 2 i, 2 i + 1, 2 i + 2 for RK4 step i); the state, q and q_dot at the
    end of every step into states, qs, qds.

    Compiled with fastmath: NaN and inf are not detected here (LLVM may drop the test);
    the caller checks the rows.
    """
    n = masses.size
    k1, k2, k3, k4 = np.empty(z.size), np.empty(z.size), np.empty(z.size), np.empty(z.size)
    y = z.copy()
    rates = np.empty(n)
    for i in range(qs.shape[0]):
        for j in range(sub):
            row = 2 * (i * sub + j)
            _rate_into(half, inv, masses, inertias, servo, y, inputs[row], k1)
            _rate_into(half, inv, masses, inertias, servo, y + 0.5 * h * k1, inputs[row + 1], k2)
            _rate_into(half, inv, masses, inertias, servo, y + 0.5 * h * k2, inputs[row + 1], k3)
            _rate_into(half, inv, masses, inertias, servo, y + h * k3, inputs[row + 2], k4)
            y += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        states[i] = y
        _rate_into(half, inv, masses, inertias, servo, y, inputs[2 * (i + 1) * sub], k1)
        rates[:] = k1[2 : n + 2]
        for k in range(n - 1):
            qs[i, k] = y[k + 3] - y[k + 2]
            qds[i, k] = rates[k + 1] - rates[k]


def simulate_wheeled(
    model: SnakeModel,
    motion: Motion,
    t_end: float,
    dt: float,
    servo: ServoModel,
    every: int = 1,
    progress: Callable[[float], None] | None = None,
) -> FloatingRun:
    """A robot on wheels following ``motion`` with its servos (eq. 415) from the straight
    pose at rest, sampled as a floating base's run (eq. 416).

    Args:
        model: a robot with ``ground: wheels``.
        motion: t -> (q, q_dot, q_ddot), the servos' reference.
        t_end: duration [s].
        dt: step [s].
        servo: the servos.
        every: keep every ``every``-th step.
        progress: called with the fraction done.

    Returns:
        The run; its ``tau`` are the servo torques.
    """
    sim = WheeledSimulator(model, dt, servo=servo)
    sim.warm_up()
    source = MotionInput(motion, sim.servo.dead_times)
    steps = round(t_end / dt)
    rows: list[tuple[float, FloatingState, FloatArray, float, FloatArray]] = []

    def sample() -> None:
        state = sim.base_state
        theta = sim.z[2:-2]
        heading = math.atan2(float(np.sin(theta).sum()), float(np.cos(theta).sum()))
        rows.append((sim.time, state, sim.centre_of_mass, heading, sim.tau))

    sample()
    done = 0
    while done < steps:
        batch = min(every, steps - done)
        sim.advance(batch, source)
        done += batch
        sample()
        if progress is not None:
            progress(done / steps)
    return FloatingRun(
        np.array([r[0] for r in rows]),
        np.array([r[1].position for r in rows]),
        np.array([r[1].quaternion for r in rows]),
        np.array([r[1].q for r in rows]),
        np.array([r[1].nu for r in rows]),
        np.array([r[2] for r in rows]),
        np.array([r[3] for r in rows]),
        np.array([r[4] for r in rows]),
    )


def warm_up() -> None:
    """Compile this module's kernels now (numba's cache), not in the middle of a run."""
    planar = SnakeModel.uniform(2, 0.1, 0.1, 0.02, axes="z", base="floating")
    model = dataclasses.replace(planar, wheels=True)
    WheeledSimulator(model, 0.001, stiffness=1.0, damping=0.01).warm_up()

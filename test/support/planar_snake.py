"""Independent reference: the planar snake with anisotropic viscous friction.

The standard model of Liljebäck, Pettersen, Stavdahl and Gravdahl ("Snake Robots: Modelling,
Mechatronics, and Control", Springer 2013, ch. 2), written from its equations alone (numpy
only, nothing from the repository's packages) so that it can check the 3D model in the tests.

Model
-----
N rigid links move in the horizontal plane; each has length 2l, mass m and inertia J about
its centre of mass (CM) for rotation about the vertical. theta (N) are the absolute link
angles (from the world x axis), phi_i = theta_i - theta_{i+1} (N-1) the joint angles, and
p = (p_x, p_y) the CM of the whole snake. Link 1 is the tail, link N the head: every link
points (its angle is the direction from its tail end to its head end) towards the head.

With A ((N-1)xN, 1 on the diagonal and the superdiagonal), D (1 on the diagonal, -1 on the
superdiagonal), e = ones(N), K = Aᵀ(DDᵀ)⁻¹D, V = Aᵀ(DDᵀ)⁻¹A = KKᵀ, S = diag(sin theta) and
C = diag(cos theta), the link CMs are::

    X = -l Kᵀ cos theta + e p_x,    Y = -l Kᵀ sin theta + e p_y.

Check: D X = -l A cos theta (because D Kᵀ = A and D e = 0), i.e. X_{i+1} - X_i =
l cos theta_i + l cos theta_{i+1}: the head end of link i is the tail end of link i+1; and
eᵀX = N p_x (because K e = 0). Differentiating, Xdot = l Kᵀ S thetadot + e pdot_x and
Ydot = -l Kᵀ C thetadot + e pdot_y.

Friction is viscous and acts at each link's CM (no torque about it): c_t along the link,
c_n across it. In the link frame (unit vectors t_i = (cos, sin), n_i = (-sin, cos)) the force
is -diag(c_t, c_n) (v.t, v.n); rotated into the world frame it is -R diag(c_t, c_n) Rᵀ v with
R the link's rotation, i.e. per link::

    [f_x; f_y] = -[[c_t c² + c_n s², (c_t - c_n) s c], [(c_t - c_n) s c, c_t s² + c_n c²]]
                 [Xdot; Ydot].

(The book's Coulomb model is not implemented.)

Equations of motion (u: the N-1 joint torques; link i receives u_i - u_{i-1}, i.e. Dᵀu,
whose power is u·phidot)::

    M_theta thetaddot + W_theta thetadot² - l S K f_x + l C K f_y = Dᵀ u     (1)
    N m pddot = [eᵀ f_x; eᵀ f_y]                                              (2)

with M_theta = J I + m l² (S V S + C V C), i.e. (M_theta)_ij = J δ_ij + m l² V_ij
cos(theta_i - theta_j), and W_theta = m l² (S V C - C V S), i.e. (W_theta)_ij = m l² V_ij
sin(theta_i - theta_j); thetadot² is element-wise. These are Lagrange's equations for the
kinetic energy T = N m |pdot|²/2 + thetadotᵀ M_theta thetadot / 2 (the cross terms in
pdot·thetadot vanish because K e = 0): the generalised friction force on theta is
(dX/dtheta)ᵀ f_x + (dY/dtheta)ᵀ f_y = l S K f_x - l C K f_y, and
Mdot thetadot - dT/dtheta works out, entry by entry, to W_theta thetadot². Both matrices
depend on the relative angles only, hence on phi alone.

Reduction with prescribed joint angles
--------------------------------------
The joint angles phi(t) are imposed exactly, so the only unknowns are p and one absolute
angle. This module integrates theta_N, the head's angle::

    theta = e theta_N + H phi,  H_ik = 1 if k >= i else 0   (N x (N-1); D H = I, D e = 0)

(theta_i = theta_N + phi_i + ... + phi_{N-1}), so thetadot = e thetadot_N + H phidot and
thetaddot = e thetaddot_N + H phiddot. The torques u are unknown; eᵀ is in the null space of
Dᵀ (eᵀDᵀ = (D e)ᵀ = 0: the joint torques are internal and cancel), so pre-multiplying (1) by
eᵀ removes them and leaves one scalar equation, the balance of angular momentum about the
CM (eᵀ M_theta thetadot is the snake's angular momentum about its CM, the momentum
conjugate to a rigid rotation of the whole body)::

    thetaddot_N = -(eᵀ M_theta H phiddot + eᵀ W_theta thetadot²
                    - l sinthetaᵀ K f_x + l costhetaᵀ K f_y) / (eᵀ M_theta e),

and (2) gives pddot = (sum f_x, sum f_y) / (N m). The friction forces depend on pdot,
thetadot_N and the prescribed phi, phidot, so this is an explicit ODE in
(p, theta_N, pdot, thetadot_N), integrated with classical RK4 at a fixed step.

Initial conditions: p = 0, pdot = 0, theta_N = theta_n0, and thetadot_N chosen so that the
total angular momentum about the CM is zero: thetadot_N = -eᵀ M_theta H phidot /
(eᵀ M_theta e) (the snake starts at rest as a whole while its joints already move).

Direction of travel: with phi_i = alpha sin(omega t + (i-1) delta), delta > 0 and
omega > 0, the phase increases towards the head, so the body wave travels from the head to
the tail and the snake moves head first (positive speed along its mean heading, the
direction the links point in) when c_n > c_t; delta < 0 reverses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
#: t [s] -> (phi [rad], phi_dot [rad/s], phi_ddot [rad/s²]), each of shape (N-1,).
JointMotion = Callable[[float], tuple[FloatArray, FloatArray, FloatArray]]


@dataclass(frozen=True)
class PlanarSnake:
    """Parameters of the planar snake and its kinematic matrices.

    Attributes:
        n_links: N, the number of links (at least 2).
        half_length: l [m]; each link is 2l long.
        mass: m [kg] of each link.
        inertia: J [kg m²] of each link about its CM, for rotation about the vertical.
        c_t: viscous friction coefficient along a link [N s/m].
        c_n: viscous friction coefficient across a link [N s/m].
    """

    n_links: int
    half_length: float
    mass: float
    inertia: float
    c_t: float
    c_n: float

    def __post_init__(self) -> None:
        if self.n_links < 2:
            raise ValueError(f"n_links must be at least 2, got {self.n_links}")
        if self.half_length <= 0 or self.mass <= 0 or self.inertia <= 0:
            raise ValueError("half_length, mass and inertia must be positive")
        if self.c_t < 0 or self.c_n < 0:
            raise ValueError("friction coefficients must be non-negative")

    # -- constant matrices -------------------------------------------------------------------

    @cached_property
    def A(self) -> FloatArray:
        """(N-1, N): 1 on the diagonal and the superdiagonal (sums of neighbours)."""
        n = self.n_links
        return np.eye(n - 1, n) + np.eye(n - 1, n, 1)

    @cached_property
    def D(self) -> FloatArray:
        """(N-1, N): 1 on the diagonal, -1 on the superdiagonal (differences of neighbours)."""
        n = self.n_links
        return np.eye(n - 1, n) - np.eye(n - 1, n, 1)

    @cached_property
    def K(self) -> FloatArray:
        """(N, N): K = Aᵀ(DDᵀ)⁻¹D."""
        return self.A.T @ np.linalg.solve(self.D @ self.D.T, self.D)

    @cached_property
    def V(self) -> FloatArray:
        """(N, N): V = Aᵀ(DDᵀ)⁻¹A (= K Kᵀ)."""
        return self.A.T @ np.linalg.solve(self.D @ self.D.T, self.A)

    @cached_property
    def H(self) -> FloatArray:
        """(N, N-1): theta = e theta_N + H phi; H_ik = 1 for k >= i (D H = I)."""
        n = self.n_links
        return np.triu(np.ones((n, n - 1)))

    # -- state-dependent quantities ----------------------------------------------------------

    def thetas(self, theta_n: float, phi: FloatArray) -> FloatArray:
        """Absolute link angles [rad], shape (N,), from the head's angle and the joint angles."""
        return theta_n + self.H @ phi

    def link_positions(self, theta: FloatArray, p: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Link CMs [m]: X = -l Kᵀ cos theta + e p_x, Y = -l Kᵀ sin theta + e p_y."""
        lk = self.half_length * self.K.T
        return -lk @ np.cos(theta) + p[0], -lk @ np.sin(theta) + p[1]

    def link_velocities(
        self, theta: FloatArray, theta_dot: FloatArray, p_dot: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Link CM velocities [m/s]: Xdot = l Kᵀ S thetadot + e pdot_x, Ydot = -l Kᵀ C
        thetadot + e pdot_y."""
        lk = self.half_length * self.K.T
        return (
            lk @ (np.sin(theta) * theta_dot) + p_dot[0],
            -lk @ (np.cos(theta) * theta_dot) + p_dot[1],
        )

    def friction(
        self, theta: FloatArray, x_dot: FloatArray, y_dot: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Viscous friction forces on the links [N] (world frame), f_x and f_y, each (N,)."""
        s, c = np.sin(theta), np.cos(theta)
        v_t = c * x_dot + s * y_dot  # along each link
        v_n = -s * x_dot + c * y_dot  # across it
        f_t, f_n = -self.c_t * v_t, -self.c_n * v_n
        return c * f_t - s * f_n, s * f_t + c * f_n

    def mass_matrix(self, theta: FloatArray) -> FloatArray:
        """M_theta [kg m²] (N, N) = J I + m l² (S V S + C V C)."""
        rel = theta[:, None] - theta[None, :]
        ml2 = self.mass * self.half_length**2
        return self.inertia * np.eye(self.n_links) + ml2 * self.V * np.cos(rel)

    def coriolis_matrix(self, theta: FloatArray) -> FloatArray:
        """W_theta [kg m²] (N, N) = m l² (S V C - C V S); it multiplies thetadot² (element-wise)."""
        rel = theta[:, None] - theta[None, :]
        return self.mass * self.half_length**2 * self.V * np.sin(rel)

    def angular_momentum(self, theta: FloatArray, theta_dot: FloatArray) -> float:
        """Angular momentum of the snake about its CM [kg m²/s]: eᵀ M_theta thetadot."""
        return float(np.sum(self.mass_matrix(theta) @ theta_dot))

    def head_rate_at_rest(self, theta: FloatArray, phi_dot: FloatArray) -> float:
        """thetadot_N [rad/s] giving zero angular momentum about the CM for joint rates phi_dot."""
        m_theta = self.mass_matrix(theta)
        return -float(np.sum(m_theta @ (self.H @ phi_dot)) / np.sum(m_theta))

    def accelerations(
        self,
        theta_n: float,
        p_dot: FloatArray,
        theta_n_dot: float,
        phi: FloatArray,
        phi_dot: FloatArray,
        phi_ddot: FloatArray,
    ) -> tuple[FloatArray, float]:
        """pddot [m/s²] (2,) and thetaddot_N [rad/s²] of the reduced 3-DOF equations."""
        theta = theta_n + self.H @ phi
        theta_dot = theta_n_dot + self.H @ phi_dot
        x_dot, y_dot = self.link_velocities(theta, theta_dot, p_dot)
        f_x, f_y = self.friction(theta, x_dot, y_dot)
        m_theta = self.mass_matrix(theta)
        w_theta = self.coriolis_matrix(theta)
        lh = self.half_length
        rhs = (
            np.sum(m_theta @ (self.H @ phi_ddot))
            + np.sum(w_theta @ theta_dot**2)
            - lh * np.sin(theta) @ (self.K @ f_x)
            + lh * np.cos(theta) @ (self.K @ f_y)
        )
        theta_n_ddot = -float(rhs) / float(np.sum(m_theta))
        p_ddot = np.array([f_x.sum(), f_y.sum()]) / (self.n_links * self.mass)
        return p_ddot, theta_n_ddot


def lateral_undulation(
    alpha: float, omega: float, delta: float, phi0: float = 0.0, *, n_links: int
) -> JointMotion:
    """The lateral-undulation gait phi_i(t) = alpha sin(omega t + (i-1) delta) + phi0.

    Args:
        alpha: amplitude [rad].
        omega: angular frequency [rad/s].
        delta: phase offset between neighbouring joints [rad]; > 0 sends the wave from the
            head (link N) to the tail, so the snake moves head first.
        phi0: offset [rad] added to every joint (turns the snake).
        n_links: N, the number of links of the snake it drives (keyword only): the gait has
            N-1 joints, i = 1..N-1.

    Returns:
        A function t [s] -> (phi [rad], phi_dot [rad/s], phi_ddot [rad/s²]), each (N-1,).
    """
    if n_links < 2:
        raise ValueError(f"n_links must be at least 2, got {n_links}")
    offsets = np.arange(n_links - 1) * delta

    def joints(t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        arg = omega * t + offsets
        sin, cos = np.sin(arg), np.cos(arg)
        return alpha * sin + phi0, alpha * omega * cos, -alpha * omega**2 * sin

    return joints


@dataclass
class PlanarRun:
    """A simulated trajectory, sampled at every integration step.

    Attributes:
        t: times [s], (T,).
        p: CM of the whole snake [m], (T, 2).
        theta: absolute link angles [rad], (T, N); theta[:, -1] is the head.
        p_dot: CM velocity [m/s], (T, 2).
        theta_dot: absolute link rates [rad/s], (T, N).
    """

    t: FloatArray
    p: FloatArray
    theta: FloatArray
    p_dot: FloatArray
    theta_dot: FloatArray

    def _check_window(self, t0: float, t1: float) -> None:
        if not self.t[0] <= t0 < t1 <= self.t[-1] + 1e-12:
            raise ValueError(f"need {self.t[0]} <= t0 < t1 <= {self.t[-1]}, got [{t0}, {t1}]")

    def position(self, t: float) -> FloatArray:
        """CM position [m] (2,) at time t [s], linearly interpolated between samples."""
        return np.array([np.interp(t, self.t, self.p[:, k]) for k in range(2)])

    def mean_velocity(self, t0: float, t1: float) -> FloatArray:
        """Average CM velocity [m/s] (2,) over [t0, t1] [s]: displacement / (t1 - t0)."""
        self._check_window(t0, t1)
        return (self.position(t1) - self.position(t0)) / (t1 - t0)

    def mean_heading(self, t0: float, t1: float) -> float:
        """Mean heading [rad] over [t0, t1] [s]: the direction of the mean unit vector of all
        link angles at the samples in the window (the direction the links point in: towards
        the head)."""
        self._check_window(t0, t1)
        window = (self.t >= t0) & (self.t <= t1)
        th = self.theta[window]
        return math.atan2(float(np.sin(th).mean()), float(np.cos(th).mean()))

    def forward_speed(self, t0: float, t1: float) -> float:
        """Mean CM velocity over [t0, t1] projected on the mean heading [m/s]; > 0 is head
        first."""
        h = self.mean_heading(t0, t1)
        return float(self.mean_velocity(t0, t1) @ np.array([math.cos(h), math.sin(h)]))


def simulate(
    snake: PlanarSnake, joints: JointMotion, t_end: float, dt: float, theta_n0: float = 0.0
) -> PlanarRun:
    """Simulate the snake with its joint angles prescribed exactly.

    The unknowns are p (the CM of the whole snake) and theta_N (the head's absolute angle);
    the other link angles follow from phi. Integration is classical RK4 with a fixed step
    h = t_end / ceil(t_end / dt) <= dt.

    Args:
        snake: the snake's parameters.
        joints: t [s] -> (phi [rad], phi_dot [rad/s], phi_ddot [rad/s²]), each (N-1,)
            (e.g. :func:`lateral_undulation`).
        t_end: duration [s] (> 0); the run starts at t = 0.
        dt: largest step [s] (> 0).
        theta_n0: initial head angle theta_N(0) [rad].

    Returns:
        The trajectory at every step. Initially p = 0, pdot = 0, theta_N = theta_n0 and
        thetadot_N is such that the angular momentum about the CM is zero.
    """
    if t_end <= 0 or dt <= 0:
        raise ValueError("t_end and dt must be positive")
    n = snake.n_links
    steps = math.ceil(t_end / dt - 1e-9)
    h = t_end / steps

    phi, phi_dot, _ = joints(0.0)
    if np.shape(phi) != (n - 1,) or np.shape(phi_dot) != (n - 1,):
        raise ValueError(f"joints must return arrays of shape ({n - 1},), got {np.shape(phi)}")
    # State y = (p_x, p_y, theta_N, pdot_x, pdot_y, thetadot_N).
    y = np.zeros(6)
    y[2] = theta_n0
    y[5] = snake.head_rate_at_rest(snake.thetas(theta_n0, phi), phi_dot)

    def f(t: float, y: FloatArray) -> FloatArray:
        ph, ph_dot, ph_ddot = joints(t)
        p_ddot, th_ddot = snake.accelerations(y[2], y[3:5], y[5], ph, ph_dot, ph_ddot)
        return np.array([y[3], y[4], y[5], p_ddot[0], p_ddot[1], th_ddot])

    t: FloatArray = h * np.arange(steps + 1, dtype=np.float64)
    t[-1] = t_end
    states = np.empty((steps + 1, 6))
    states[0] = y
    for k in range(steps):
        tk = t[k]
        k1 = f(tk, y)
        k2 = f(tk + h / 2, y + h / 2 * k1)
        k3 = f(tk + h / 2, y + h / 2 * k2)
        k4 = f(tk + h, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        states[k + 1] = y

    theta = np.empty((steps + 1, n))
    theta_dot = np.empty((steps + 1, n))
    for k in range(steps + 1):
        ph, ph_dot, _ = joints(float(t[k]))
        theta[k] = states[k, 2] + snake.H @ ph
        theta_dot[k] = states[k, 5] + snake.H @ ph_dot
    return PlanarRun(
        t=t, p=states[:, 0:2].copy(), theta=theta, p_dot=states[:, 3:5].copy(), theta_dot=theta_dot
    )

"""Cross-checks between the wheeled snake, the kinematic snake and the floating MFM snake on
the ground (docs/mfm.md, "Cross-checks between the wheeled, kinematic and floating snakes",
eqs. 420-427).

Three formulations of the same 3-link wheeled snake, written independently:

* :mod:`snake_dynamics.planar.wheeled` (Kane, eqs. 401-414): links numbered tail to head,
  link k+1 ahead of link k, headings θ_k, joint angles φ_k = θ_{k+1} - θ_k;
* :mod:`snake_dynamics.planar.kinematic` (eqs. 307-313): the body frame on the middle link,
  link 1 the head, shape r = (α1, α2) with headings θ + α1, θ, θ - α2;
* the floating-base MFM snake (eqs. 221-237): bodies 0 (tail) .. 2 (head), yaw joints, on
  a ground whose friction across the links stands in for the wheels.

So the kinematic snake's link 1, 2, 3 are the wheeled snake's links 3, 2, 1 and the MFM's
bodies 2, 1, 0, and both φ and the MFM's joint angles q are (α2, α1) (eq. 420). Every
link's frame points from the tail to the head in all three, so the middle link's body
velocity is (V_2, 0, ω_2) in both planar models (eq. 421). With three links the two joint
rates fix the wheeled snake's two generalised speeds (eq. 422); integrating its kinematics
then reproduces the kinematic snake's reconstruction (eq. 423). The floating snake, its
joints prescribed along the gait and its friction across the links made stiffer (eqs.
424, 425), converges to that same motion (eqs. 426, 427).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from snake_dynamics.errors import (
    ModelError,
    SimulationError,
    SingularConfigurationError,
    StateError,
)
from snake_dynamics.floating import (
    FloatingState,
    MotionFn,
    rest_state,
    simulate_prescribed_fast,
    world_poses,
)
from snake_dynamics.ground import Ground, stable_step
from snake_dynamics.model import SnakeModel
from snake_dynamics.planar import se2
from snake_dynamics.planar.kinematic import DIAGONAL_TOL, LateralUndulation
from snake_dynamics.planar.wheeled import WheeledSnake, link_speeds

FloatArray = NDArray[np.float64]

#: |g| [m/s^2] of the floating twin's gravity (along -e3).
GRAVITY = 9.81


def _shape(r: ArrayLike, name: str) -> FloatArray:
    out = np.asarray(r, dtype=float)
    if out.shape != (2,) or not np.all(np.isfinite(out)):
        raise StateError(f"{name} must be a finite pair (alpha1, alpha2), got {r!r}")
    return out


def _three_links(snake: WheeledSnake) -> None:
    if snake.n != 3:
        raise ModelError(
            f"the cross-check needs the 3-link wheeled snake (two joint rates fix its two "
            f"speeds only then), got n = {snake.n}; use WheeledSnake.uniform(3, ...)"
        )


# -------------------------------------------------------------- the frame mapping
def joint_angles(r: ArrayLike) -> FloatArray:
    """The wheeled snake's joint angles (φ_1, φ_2) = (α2, α1) of a kinematic shape (eq. 420).

    Also the MFM twin's joint angles q, and, applied to ṙ, the joint rates.

    Args:
        r: the kinematic snake's shape (α1, α2) [rad] (or its rate [rad/s]), shape (2,).

    Returns:
        (φ_1, φ_2) [rad] (or [rad/s]), shape (2,).
    """
    return _shape(r, "r")[::-1].copy()


def wheeled_headings(theta: float, r: ArrayLike) -> FloatArray:
    """The wheeled snake's link headings for a kinematic pose heading θ and shape r (eq. 420).

    Args:
        theta: the middle link's heading θ [rad].
        r: shape (α1, α2) [rad], shape (2,).

    Returns:
        (θ_1, θ_2, θ_3) = (θ - α2, θ, θ + α1) [rad], tail to head, shape (3,).
    """
    a = _shape(r, "r")
    return np.array([theta - a[1], theta, theta + a[0]])


# ------------------------------------------------------- speeds from the shape rate
def shape_speeds(snake: WheeledSnake, r: ArrayLike, r_dot: ArrayLike) -> FloatArray:
    """The generalised speeds u = (V_1, ω_1) that give the joint rates of ṙ (eq. 422).

    ω_k = R_k · u exactly (eq. 404, no bias), so φ̇_k = (R_{k+1} - R_k) · u is a 2x2 linear
    system; its determinant is D / h with D of eq. 310 (h the half-length), so it is
    singular exactly where the kinematic snake's local connection is.

    Args:
        snake: the 3-link wheeled snake (equal links: the kinematic snake's geometry).
        r: shape (α1, α2) [rad], shape (2,).
        r_dot: shape velocity (α̇1, α̇2) [rad/s], shape (2,).

    Returns:
        u = (V_1 [m/s], ω_1 [rad/s]), shape (2,).

    Raises:
        ModelError: ``snake`` does not have 3 links.
        SingularConfigurationError: r on the line α1 = α2 (as in the kinematic snake, with
            its tolerance), where the joint rates do not fix u.
    """
    _three_links(snake)
    a = _shape(r, "r")
    phi_dot = joint_angles(_shape(r_dot, "r_dot"))
    if abs(math.sin(0.5 * (a[0] - a[1]))) < DIAGONAL_TOL:
        raise SingularConfigurationError(
            f"shape r = {a.tolist()} lies on the singular line alpha1 = alpha2: the joint "
            "rates do not fix the wheeled snake's speeds there; step off the line"
        )
    partials = link_speeds(snake, wheeled_headings(0.0, a), (0.0, 0.0)).rate_partials
    return np.asarray(np.linalg.solve(np.diff(partials, axis=0), phi_dot), dtype=float)


def wheeled_body_velocity(snake: WheeledSnake, r: ArrayLike, r_dot: ArrayLike) -> FloatArray:
    """The middle link's body velocity ξ = (V_2, 0, ω_2) by Kane's recursions (eqs. 421, 422).

    The wheeled snake's twin of :func:`snake_dynamics.planar.kinematic.body_velocity`:
    u from :func:`shape_speeds`, then V_2 and ω_2 from eq. 403.

    Args:
        snake: the 3-link wheeled snake.
        r: shape (α1, α2) [rad], shape (2,).
        r_dot: shape velocity (α̇1, α̇2) [rad/s], shape (2,).

    Returns:
        ξ = (ξ_x [m/s], ξ_y [m/s], ξ_θ [rad/s]) in the middle link's frame, shape (3,).
    """
    u = shape_speeds(snake, r, r_dot)
    sp = link_speeds(snake, wheeled_headings(0.0, r), u)
    return np.array([sp.speed[1], 0.0, sp.rate[1]])


def middle_pose(
    snake: WheeledSnake, x1: float, y1: float, theta1: float, r: ArrayLike
) -> FloatArray:
    """The middle link's pose (x, y, θ) from link 1's centre and heading (eqs. 401, 420).

    Args:
        snake: the 3-link wheeled snake.
        x1: link 1's centre, x [m].
        y1: link 1's centre, y [m].
        theta1: link 1's heading θ_1 [rad].
        r: shape (α1, α2) [rad], shape (2,).

    Returns:
        (x [m], y [m], θ [rad]) of the middle link's centre, shape (3,).
    """
    _three_links(snake)
    theta2 = theta1 + _shape(r, "r")[1]
    h1, h2 = snake.half_lengths[:2]
    return np.array(
        [
            x1 + h1 * math.cos(theta1) + h2 * math.cos(theta2),
            y1 + h1 * math.sin(theta1) + h2 * math.sin(theta2),
            theta2,
        ]
    )


def wheeled_reconstruct(
    snake: WheeledSnake,
    gait: LateralUndulation,
    t_eval: ArrayLike,
    pose0: ArrayLike = (0.0, 0.0, 0.0),
    rtol: float = 1e-12,
    atol: float = 1e-12,
) -> FloatArray:
    """The middle link's poses along the gait from the wheeled snake's kinematics (eq. 423).

    Integrates ẋ_1 = V_1 cos θ_1, ẏ_1 = V_1 sin θ_1, θ̇_1 = ω_1 (eq. 408) with u(t) from
    :func:`shape_speeds` by scipy's DOP853, link 1 placed so that the middle link starts at
    ``pose0``.

    Args:
        snake: the 3-link wheeled snake.
        gait: the shape gait r(t).
        t_eval: increasing output times [s] from t = 0, shape (T,).
        pose0: the middle link's pose (x [m], y [m], θ [rad]) at t = 0.
        rtol: relative tolerance of the integrator.
        atol: absolute tolerance of the integrator.

    Returns:
        (x, y, θ) of the middle link at ``t_eval``, θ unwrapped [m, m, rad], shape (T, 3).

    Raises:
        SimulationError: the integrator failed.
    """
    _three_links(snake)
    times = np.asarray(t_eval, dtype=float)
    x, y, theta = np.asarray(pose0, dtype=float)
    r0 = gait.shape(0.0)
    theta1 = theta - r0[1]
    h1, h2 = snake.half_lengths[:2]
    start = [
        x - h1 * math.cos(theta1) - h2 * math.cos(theta),
        y - h1 * math.sin(theta1) - h2 * math.sin(theta),
        theta1,
    ]

    def rhs(t: float, z: FloatArray) -> FloatArray:
        v1, w1 = shape_speeds(snake, gait.shape(t), gait.shape_velocity(t))
        return np.array([v1 * math.cos(z[2]), v1 * math.sin(z[2]), w1])

    sol = solve_ivp(
        rhs, (0.0, float(times[-1])), start, method="DOP853", t_eval=times, rtol=rtol, atol=atol
    )
    if not sol.success:
        raise SimulationError(f"the wheeled snake's kinematics failed: {sol.message}")
    return np.array(
        [
            middle_pose(snake, z[0], z[1], z[2], gait.shape(t))
            for t, z in zip(sol.t, sol.y.T, strict=True)
        ]
    )


def wheeled_cycle_displacement(
    snake: WheeledSnake, gait: LateralUndulation, rtol: float = 1e-12, atol: float = 1e-12
) -> FloatArray:
    """g(0)⁻¹ g(T) of the middle link over one gait cycle, by :func:`wheeled_reconstruct`.

    The twin of :func:`snake_dynamics.planar.kinematic.cycle_displacement` (eq. 423).

    Returns:
        (Δx [m], Δy [m], Δθ [rad]) in the middle link's frame at t = 0, shape (3,).
    """
    poses = wheeled_reconstruct(snake, gait, [0.0, gait.period], rtol=rtol, atol=atol)
    return se2.coordinates(se2.inverse(se2.pose(*poses[0])) @ se2.pose(*poses[1]))


# --------------------------------------------------------------- the floating twin
def viscous_ground(viscous_across: float) -> Ground:
    """A ground that acts as the wheels through viscous friction c_n across the links (eq. 425).

    Nothing resists motion along a link (μ_along = c_t = 0: the wheels roll freely); the
    viscous force acts at each body's CM, where the wheeled snake's wheel is; one contact
    point per body, at its middle, carries the weight.

    Args:
        viscous_across: c_n [N s/m], > 0.
    """
    return Ground(mu_along=0.0, mu_across=0.0, viscous_across=viscous_across, contacts=1)


def coulomb_ground(mu_across: float, velocity_scale: float) -> Ground:
    """A ground that acts as the wheels through regularised Coulomb friction across the
    links at one contact point per body, below its CM (eqs. 425, 234).

    Args:
        mu_across: μ_across, > 0.
        velocity_scale: v_s, the tanh regularisation [m/s], > 0.
    """
    return Ground(mu_along=0.0, mu_across=mu_across, velocity_scale=velocity_scale, contacts=1)


def floating_twin(length: float, mass: float, radius: float, ground: Ground) -> SnakeModel:
    """The MFM snake with the kinematic snake's geometry on ``ground`` (eq. 424).

    A floating tail and two links (three bodies, all ``length`` long, CMs at their middles,
    joints at their ends), both joints yaw (e3), under gravity 9.81 m/s^2 along -e3.

    Args:
        length: L [m].
        mass: every body's mass [kg].
        radius: every body's radius [m]; the contact point is this far below the CM.
        ground: the ground (:func:`viscous_ground`, :func:`coulomb_ground`).
    """
    return SnakeModel.uniform(
        2,
        mass,
        length,
        radius,
        axes="z",
        tail_length=length,
        gravity=(0.0, 0.0, -GRAVITY),
        base="floating",
        ground=ground,
    )


def gait_motion(gait: LateralUndulation) -> MotionFn:
    """The MFM joints' (q, q̇, q̈)(t) that follow the kinematic gait (eqs. 312, 420, 424).

    q = (α2, α1); the gait is sinusoidal, so q̈ = -ω² q.
    """
    w2 = gait.frequency**2

    def motion(t: float) -> tuple[FloatArray, FloatArray, FloatArray]:
        q = joint_angles(gait.shape(t))
        return q, joint_angles(gait.shape_velocity(t)), -w2 * q

    return motion


def floating_middle_pose(
    model: SnakeModel, position: ArrayLike, quaternion: ArrayLike, q: ArrayLike
) -> FloatArray:
    """The planar pose of the floating snake's middle body (body 1) (eq. 424).

    Args:
        model: the floating twin.
        position: the tail's CM [m], shape (3,).
        quaternion: the tail's orientation (x, y, z, w), shape (4,).
        q: joint angles [rad], shape (2,).

    Returns:
        (x [m], y [m], θ [rad]): body 1's CM in the ground plane and the heading of its
        long axis R_1 e2 (tail to head) projected on the plane, shape (3,).
    """
    state = FloatingState(
        np.asarray(position, dtype=float),
        np.asarray(quaternion, dtype=float),
        np.asarray(q, dtype=float),
        np.zeros(6 + model.n_joints),
    )
    rotations, centres = world_poses(model, state)
    axis = rotations[1][:, 1]
    return np.array([centres[1, 0], centres[1, 1], math.atan2(axis[1], axis[0])])


@dataclasses.dataclass(frozen=True)
class Convergence:
    """How far the floating snake is from the kinematic snake (:func:`convergence_error`).

    Attributes:
        ground: the ground of the run.
        dt: the RK4 step [s].
        steps: number of steps (two gait periods).
        position_error: e_p of eq. 426 over the second period [m].
        heading_error: e_θ of eq. 426 over the second period [rad].
        from_rest_error: e_p over both periods, the reference started with the floating
            snake at t = 0, the start-up from rest included [m].
    """

    ground: Ground
    dt: float
    steps: int
    position_error: float
    heading_error: float
    from_rest_error: float


def _window_errors(
    gait: LateralUndulation,
    length: float,
    times: FloatArray,
    poses: FloatArray,
    refine: int,
) -> tuple[float, float]:
    """max |Δp| and max |Δθ| between ``poses`` at ``times`` (equally spaced) and the
    kinematic reconstruction (eq. 306) from poses[0] at times[0] (eq. 426)."""
    steps = (len(times) - 1) * refine
    _, g = se2.integrate_magnus4(
        se2.pose(*poses[0]),
        lambda t: gait.body_velocity(t, length),
        float(times[0]),
        float(times[-1]),
        steps,
    )
    reference = np.array([se2.coordinates(m) for m in g[::refine]])
    position = np.hypot(*(poses[:, :2] - reference[:, :2]).T)
    heading = [
        abs(math.remainder(a - b, 2.0 * math.pi))
        for a, b in zip(poses[:, 2], reference[:, 2], strict=True)
    ]
    return float(np.max(position)), float(np.max(heading))


def convergence_error(
    ground: Ground,
    gait: LateralUndulation,
    length: float = 0.2,
    mass: float = 0.5,
    radius: float = 0.002,
    samples: int = 200,
    refine: int = 4,
    step_fraction: float = 1.0,
) -> Convergence:
    """Run the floating twin on ``ground`` for two gait periods and compare its middle
    body with the kinematic snake's reconstruction (eqs. 424-426).

    The twin starts lying flat, its joints at the gait's r(0) and the snake at rest as a
    whole (:func:`snake_dynamics.floating.recursive.simulate_prescribed_fast`), while the
    gait's wheels would already move it: the first period lets that start-up die out. The
    reference then starts from the twin's middle pose at t = T and the errors are the
    largest differences over t in [T, 2T], at ``samples`` equally spaced times.

    Args:
        ground: the ground (:func:`viscous_ground`, :func:`coulomb_ground`).
        gait: the shape gait, period T.
        length: link length L [m].
        mass: every body's mass [kg].
        radius: every body's radius [m].
        samples: comparison times per period.
        refine: Magnus steps of the reference per sample interval.
        step_fraction: the RK4 step is at most this fraction of the ground's
            :func:`snake_dynamics.ground.stable_step` (eq. 237), in (0, 1].

    Returns:
        The errors and the step used: the largest RK4 step under that bound that divides
        a period into a multiple of ``samples`` steps.

    Raises:
        SimulationError: ``step_fraction`` outside (0, 1].
    """
    if not 0.0 < step_fraction <= 1.0:
        raise SimulationError(f"step_fraction must be in (0, 1], got {step_fraction!r}")
    model = floating_twin(length, mass, radius, ground)
    period = gait.period
    limit = step_fraction * stable_step(ground, model.masses, GRAVITY)
    every = math.ceil(period / (limit * samples))
    per_period = every * samples
    dt = period / per_period
    run = simulate_prescribed_fast(
        model,
        gait_motion(gait),
        2.0 * period,
        dt,
        rest_state(model, (0.0, 0.0, radius)),
        every=every,
    )
    poses = np.array(
        [
            floating_middle_pose(model, p, qt, q)
            for p, qt, q in zip(run.position, run.quaternion, run.q, strict=True)
        ]
    )
    position, heading = _window_errors(gait, length, run.t[samples:], poses[samples:], refine)
    from_rest, _ = _window_errors(gait, length, run.t, poses, refine)
    return Convergence(ground, dt, 2 * per_period, position, heading, from_rest)

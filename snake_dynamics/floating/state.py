"""The floating-base snake's shared vocabulary (docs/mfm.md, "The floating base" and "The
snake on the ground", eqs. 221, 237, 238): its state and the rest and lying states, a model
put on its ground, a run and what it achieved, the bodies' world poses, and the step check.
The literal equations (:mod:`.literal`) and the compiled ones (:mod:`.recursive`) both
speak it; product code imports it from here (or the package's face), never from the
literal module.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.spatial.transform import Rotation

from snake_dynamics.errors import ModelError, SimulationError, StateError
from snake_dynamics.ground import Ground, stable_step
from snake_dynamics.mfm import frame_kinematics
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


class FloatingState(NamedTuple):
    """State of a floating-base snake.

    Attributes:
        position: x_0, the tail's CM in the inertial frame [m], shape (3,).
        quaternion: R_0 as a unit quaternion (x, y, z, w), scipy's order, shape (4,).
        q: joint angles [rad], shape (n,).
        nu: [v_0 (tail frame) m/s; w_0 (tail frame) rad/s; q_dot rad/s], shape (6+n,).
    """

    position: FloatArray
    quaternion: FloatArray
    q: FloatArray
    nu: FloatArray

    @property
    def rotation(self) -> FloatArray:
        """R_0, shape (3, 3)."""
        return np.asarray(Rotation.from_quat(self.quaternion).as_matrix())


def rest_state(model: SnakeModel, position: ArrayLike = (0.0, 0.0, 0.0)) -> FloatingState:
    """The snake straight (q = 0), at rest, the tail at ``position`` with R_0 = I."""
    n = model.n_joints
    return FloatingState(
        np.asarray(position, dtype=float),
        np.array([0.0, 0.0, 0.0, 1.0]),
        np.zeros(n),
        np.zeros(6 + n),
    )


def on_the_ground(model: SnakeModel) -> SnakeModel:
    """``model`` with a floating tail on its ground under gravity: the robot file's
    ``ground:`` and ``gravity`` where it gives them, else :class:`Ground`'s defaults and
    9.81 m/s^2 down (-e3).

    Raises:
        ModelError: a robot on wheels (``ground: wheels``), whose floor is the wheeled model's.
    """
    if model.wheels:
        raise ModelError(
            f"{model.name} rolls on wheels (ground: wheels): the friction ground does not apply "
            "(snake simulate runs it with the wheeled model)"
        )
    gravity = model.gravity if np.any(model.gravity) else np.array([0.0, 0.0, -9.81])
    ground = model.ground if model.ground is not None else Ground()
    return dataclasses.replace(model, base="floating", ground=ground, gravity=gravity)


def lying_state(model: SnakeModel) -> FloatingState:
    """The snake straight along e2 (q = 0) and at rest, its thickest body touching z = 0."""
    return rest_state(model, (0.0, 0.0, float(np.max(model.radii))))


def checked_nu(model: SnakeModel, nu: ArrayLike) -> FloatArray:
    """Validate nu: shape (6+n,), finite."""
    vec = np.asarray(nu, dtype=float)
    if vec.shape != (6 + model.n_joints,) or not np.all(np.isfinite(vec)):
        raise StateError(
            f"nu must be finite with shape ({6 + model.n_joints},) (v_0, w_0, q_dot), "
            f"got shape {vec.shape}"
        )
    return vec


def checked_rotation(rotation0: ArrayLike) -> FloatArray:
    r = np.asarray(rotation0, dtype=float)
    if r.shape != (3, 3) or not np.allclose(r @ r.T, np.eye(3), atol=1e-9):
        raise StateError(f"rotation0 must be a 3x3 rotation matrix, got shape {r.shape}")
    return r


def world_poses(model: SnakeModel, state: FloatingState) -> tuple[FloatArray, FloatArray]:
    """R_b = R_0 R_b^0 and r_b = x_0 + R_0 r_b^0 of all bodies (eq. 221).

    Returns:
        Rotations, shape (n+1, 3, 3), and CM positions [m], shape (n+1, 3).
    """
    r0 = state.rotation
    kin = frame_kinematics(model, state.q)
    return r0 @ kin.rotations, state.position + kin.centres @ r0.T


#: (q, q_dot, q_ddot) = motion(t) [rad, rad/s, rad/s^2] of prescribed joints.
MotionFn = Callable[[float], tuple[FloatArray, FloatArray, FloatArray]]


class FloatingRun(NamedTuple):
    """A floating-base run, one row per sample.

    Attributes:
        t: times [s], shape (T,).
        position: x_0 [m], shape (T, 3).
        quaternion: R_0 (x, y, z, w), shape (T, 4).
        q: joint angles [rad], shape (T, n).
        nu: [v_0; w_0; q_dot], shape (T, 6+n).
        com: the whole snake's centre of mass [m], shape (T, 3).
        heading: direction of the bodies' mean long axis (tail to head) in the ground
            plane, atan2(y, x) [rad], shape (T,).
        tau: the joint torques that make the joints follow their motion (eq. 228) [N m],
            shape (T, n).
    """

    t: FloatArray
    position: FloatArray
    quaternion: FloatArray
    q: FloatArray
    nu: FloatArray
    com: FloatArray
    heading: FloatArray
    tau: FloatArray

    def mean_velocity(self, t0: float, t1: float) -> FloatArray:
        """Displacement of the centre of mass from t0 to t1 over t1 - t0 [m/s], shape (3,)."""
        i0, i1 = (int(np.searchsorted(self.t, x - 1e-12)) for x in (t0, t1))
        return np.asarray((self.com[i1] - self.com[i0]) / (self.t[i1] - self.t[i0]), dtype=float)

    def forward_speed(self, t0: float, t1: float) -> float:
        """The mean velocity from t0 to t1 along the mean heading over that time (> 0:
        head first) [m/s]."""
        window = (self.t >= t0 - 1e-12) & (self.t <= t1 + 1e-12)
        mean = np.array([np.cos(self.heading[window]).mean(), np.sin(self.heading[window]).mean()])
        return float(self.mean_velocity(t0, t1)[:2] @ mean / np.linalg.norm(mean))


def heading(model: SnakeModel, state: FloatingState) -> float:
    """atan2 of the bodies' mean long axis sum_b R_b e2 in the ground plane [rad]."""
    rotations, _ = world_poses(model, state)
    axis = rotations[:, :, 1].sum(axis=0)
    return float(np.arctan2(axis[1], axis[0]))


def centre_of_mass(model: SnakeModel, state: FloatingState) -> FloatArray:
    """The whole snake's CM, sum m_b r_b / sum m_b [m], shape (3,)."""
    _, centres = world_poses(model, state)
    return np.asarray(model.masses @ centres / model.masses.sum(), dtype=float)


def check_step(dt: float, model: SnakeModel | None = None) -> None:
    """Refuse a step that is not a finite time > 0, or, with a ``model`` on a ground, one
    over the ground's :func:`~snake_dynamics.ground.stable_step` (eq. 237) for its bodies.

    Args:
        dt: the RK4 step [s].
        model: the snake whose ground bounds the step (None, or no ground: no bound).

    Raises:
        SimulationError: in one line, with the bound and what to change.
    """
    if not (math.isfinite(dt) and dt > 0.0):
        raise SimulationError(f"dt must be a finite time step > 0 s, got {dt!r}")
    ground = None if model is None else model.ground
    if model is None or ground is None:
        return
    limit = stable_step(ground, model.masses, float(np.linalg.norm(model.gravity)))
    if dt > limit:
        raise SimulationError(
            f"dt = {dt * 1e3:g} ms is over the {limit * 1e3:.3g} ms the ground allows for "
            f"these bodies (eq. 237): use a smaller dt, or a softer ground (stiffness, "
            f"damping) or a larger velocity_scale"
        )


class Locomotion(NamedTuple):
    """What a run on the ground achieved (eq. 238).

    Attributes:
        distance: horizontal displacement of the centre of mass [m].
        mean_speed: distance / duration [m/s].
        forward_speed: mean velocity along the mean heading (> 0: head first) [m/s].
        heading_drift: change of the heading, unwrapped, from the first sample to the last [rad].
        positive_work: the joints' positive mechanical work, sum_k max(tau_k q_dot_k, 0)
            integrated over time (trapezoids on the samples) [J].
        cost_of_transport: positive_work / (m g distance) (inf if it did not move).
    """

    distance: float
    mean_speed: float
    forward_speed: float
    heading_drift: float
    positive_work: float
    cost_of_transport: float


def locomotion(model: SnakeModel, run: FloatingRun) -> Locomotion:
    """The travel, speed, heading drift and cost of transport of ``run`` (eq. 238):
    CoT = W+ / (m g d), W+ = integral of sum_k max(tau_k q_dot_k, 0) dt, m the snake's mass,
    g = |gravity| (9.81 m/s^2 if the model has none), d the distance travelled."""
    duration = float(run.t[-1] - run.t[0])
    distance = float(np.linalg.norm(run.com[-1, :2] - run.com[0, :2]))
    power = np.maximum(run.tau * run.nu[:, 6:], 0.0).sum(axis=1)
    work = float(np.sum(0.5 * (power[1:] + power[:-1]) * np.diff(run.t)))
    g = float(np.linalg.norm(model.gravity)) or 9.81
    cot = work / (float(model.masses.sum()) * g * distance) if distance > 0.0 else math.inf
    drift = np.unwrap(run.heading)
    return Locomotion(
        distance,
        distance / duration,
        run.forward_speed(float(run.t[0]), float(run.t[-1])),
        float(drift[-1] - drift[0]),
        work,
        cot,
    )

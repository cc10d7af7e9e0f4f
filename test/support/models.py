"""Random snakes that do not hide index mix-ups (mixed masses, lengths, radii, a tail length
different from the first link, full inertia tensors), random states, and the error measure
the oracle tests use."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial.transform import Rotation

from snake_dynamics import SnakeModel
from snake_dynamics.floating import FloatingState
from snake_dynamics.model import cylinder_inertia

GRAVITY = np.array([0.7, -1.3, -9.81])

# n = 5 and 20, gravity on and off, and one model with arbitrary joint axes.
MODEL_CASES = [
    (5, True, False),
    (5, False, False),
    (20, True, False),
    (20, False, False),
    (7, True, True),
]


def random_model(
    rng: np.random.Generator, n: int, gravity: bool = True, random_axes: bool = False
) -> SnakeModel:
    """A snake with every body different; inertias are cylinders turned by a random small
    rotation (full 3x3, still physical)."""
    masses = rng.uniform(0.05, 0.5, n + 1)
    lengths = rng.uniform(0.04, 0.2, n + 1)
    radii = rng.uniform(0.01, 0.05, n + 1)
    inertias = []
    for m, length, r in zip(masses, lengths, radii, strict=False):
        rot = Rotation.from_rotvec(rng.normal(scale=0.3, size=3)).as_matrix()
        inertias.append(rot @ cylinder_inertia(m, length, r) @ rot.T)
    if random_axes:
        axes = rng.normal(size=(n, 3))
        axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    else:
        axes = np.array([[1.0, 0.0, 0.0] if k % 2 == 0 else [0.0, 0.0, 1.0] for k in range(n)])
    return SnakeModel(
        masses=masses,
        lengths=lengths,
        radii=radii,
        axes=axes,
        inertias=np.array(inertias),
        gravity=GRAVITY if gravity else np.zeros(3),
        name=f"random{n}",
    )


def random_state(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q [rad], q_dot [rad/s], tau [N m] of moderate size."""
    return rng.uniform(-1.2, 1.2, n), rng.uniform(-1.5, 1.5, n), rng.uniform(-0.5, 0.5, n)


def random_floating_state(
    rng: np.random.Generator, model: SnakeModel, scale: float = 0.3, near_ground: bool = False
) -> FloatingState:
    """A random floating-base state: pose anywhere (``near_ground``: the tail's CM a few cm
    from the plane z = 0), base and joint rates of order ``scale``."""
    q, qd, _ = random_state(rng, model.n_joints)
    nu = np.concatenate([rng.normal(scale=scale, size=6), scale * qd])
    quat = Rotation.random(random_state=int(rng.integers(1 << 31))).as_quat()
    height = rng.uniform(-0.03, 0.08) if near_ground else rng.normal()
    return FloatingState(np.array([*rng.normal(size=2), height]), quat, q, nu)


def undulation(
    n: int, alpha: float, omega: float, delta: float
) -> Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """q_k = -alpha sin(omega t + (k-1) delta) with its rates: the planar reference's lateral
    undulation phi_k = theta_k - theta_{k+1} in our q_k = theta_{k+1} - theta_k (body k+1
    relative to body k)."""
    k = np.arange(n)

    def motion(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        phase = omega * t + k * delta
        s, c = np.sin(phase), np.cos(phase)
        return -alpha * s, -alpha * omega * c, alpha * omega**2 * s

    return motion


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |b| (relative to the reference's scale)."""
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))

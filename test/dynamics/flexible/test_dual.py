"""The paper's dual objects (docs/flexible.md, "Dual algebra"): their group laws, and the
dual parts against a complex step (eps = i h) through the exact rotations the kernel uses.

References: the group axioms and the adjoint identity (F19) by direct products; the
first-order Taylor term of the exact section rotation Rx Ry Rz (F23), taken by a complex
step, for the dual rotation of (F24), (F30), (F31) and the dual twist of (F16), (F17).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from snake_dynamics.flexible import dual

RNG = np.random.default_rng(7)
H = 1e-30


def random_rotation() -> np.ndarray:
    return Rotation.random(random_state=RNG).as_matrix()


def rxyz(theta: np.ndarray) -> np.ndarray:
    """Rx(theta_x) Ry(theta_y) Rz(theta_z), for real or complex angles."""
    c, s = np.cos(theta), np.sin(theta)
    one, zero = np.ones_like(c[0]), np.zeros_like(c[0])
    rx = np.array([[one, zero, zero], [zero, c[0], -s[0]], [zero, s[0], c[0]]])
    ry = np.array([[c[1], zero, s[1]], [zero, one, zero], [-s[1], zero, c[1]]])
    rz = np.array([[c[2], -s[2], zero], [s[2], c[2], zero], [zero, zero, one]])
    return np.asarray(rx @ ry @ rz)


def test_g1_product_inverse_and_identity() -> None:
    a1, a2 = random_rotation(), random_rotation()
    t1, t2 = RNG.normal(size=3), RNG.normal(size=3)
    x1, x2 = dual.dual_rotation(a1, t1), dual.dual_rotation(a2, t2)
    expected = np.zeros((6, 6))
    expected[:3, :3] = expected[3:, 3:] = a1 @ a2
    expected[3:, :3] = (dual.skew(t1) + a1 @ dual.skew(t2) @ a1.T) @ a1 @ a2
    assert np.abs(x1 @ x2 - expected).max() < 1e-12
    assert np.abs(dual.g1_inverse(x1) @ x1 - np.eye(6)).max() < 1e-12


def test_g2_inverse_and_adjoint() -> None:
    y = dual.dual_homogeneous(dual.dual_rotation(random_rotation(), RNG.normal(size=3)),
                              RNG.normal(size=6))  # fmt: skip
    assert np.abs(dual.g2_inverse(y) @ y - np.eye(7)).max() < 1e-12
    t = RNG.normal(size=12)

    def hat(v: np.ndarray) -> np.ndarray:
        out = np.zeros((7, 7))
        out[:6, :6] = dual.dual_vector_hat(v[:6])
        out[:6, 6] = v[6:]
        return out

    lhs = hat(dual.g2_adjoint(y) @ t)
    rhs = y @ hat(t) @ dual.g2_inverse(y)
    assert np.abs(lhs - rhs).max() < 1e-12


def test_interchange_and_screw_basis() -> None:
    n = dual.interchange()
    assert np.array_equal(n @ n, np.eye(12))
    # a unit rotation about x is a real line; N moves it into the dual part (F69)
    e = dual.elastic_screw_matrix(dual.mode_matrix(np.ones(1), np.zeros((2, 0)), np.zeros((2, 0))))
    assert e[:, 0].tolist() == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]
    assert np.array_equal(dual.projecting_screw_matrix(np.eye(6)), dual.screw_basis())


def test_dual_rotation_is_the_first_order_of_the_exact_section_rotation() -> None:
    a = random_rotation()
    theta = RNG.normal(size=3)
    exact = rxyz(1j * H * theta) @ a  # elastic rotation, then the rigid one (F30)
    x = dual.dual_rotation(a, theta)
    assert np.abs(exact.real - x[:3, :3]).max() < 1e-15
    assert np.abs(exact.imag / H - x[3:, :3]).max() < 1e-12


def test_dual_twist_dual_part_is_the_elastic_angular_velocity() -> None:
    # Y(t) = (R(t), r(t)) with R = A(t) rigid and the elastic rotation theta(t) in the dual part
    w_rigid, th0, thd = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3)
    a0 = random_rotation()

    def rigid(t: float) -> np.ndarray:
        return np.asarray(a0 @ Rotation.from_rotvec(w_rigid * t).as_matrix())

    def y_of(t: float) -> np.ndarray:
        return dual.dual_homogeneous(dual.dual_rotation(rigid(t), th0 + thd * t), np.zeros(6))

    eps = 1e-6
    y_dot = (y_of(eps) - y_of(-eps)) / (2 * eps)
    t_hat = dual.dual_twist(y_of(0.0), y_dot)

    # exact: R(t) = Rxyz(eps theta(t)) A(t); body angular velocity R^T R_dot, first order in eps
    def exact_body_rate(t: float, e: complex) -> np.ndarray:
        return rxyz(e * (th0 + thd * t)) @ rigid(t)

    r0 = exact_body_rate(0.0, 1j * H)
    r_dot = (exact_body_rate(eps, 1j * H) - exact_body_rate(-eps, 1j * H)) / (2 * eps)
    w = r0.T @ r_dot  # hat(omega), complex
    omega = np.array([w[2, 1], w[0, 2], w[1, 0]])
    assert np.abs(t_hat[:3] - omega.real).max() < 1e-8
    assert np.abs(t_hat[3:6] - omega.imag / H).max() < 1e-7

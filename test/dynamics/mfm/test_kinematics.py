"""B, B_dot, M*, F* against finite differences and the paper's identities."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from support.models import MODEL_CASES, random_model, random_state, rel_err

import snake_dynamics as sd
from snake_dynamics.mfm import hat, vee


def test_link_poses_follow_eq_48_by_hand() -> None:
    # Two bodies, tail length 0.2, link length 0.1, joint 1 about e1 by 90 degrees:
    # the joint sits at (0, 0.1, 0); link 1's CM is 0.05 further along the rotated e2 = e3.
    model = sd.SnakeModel(
        masses=[1.0, 1.0], lengths=[0.2, 0.1], radii=[0.01, 0.01], axes=[[1.0, 0.0, 0.0]]
    )
    poses = sd.link_poses(model, [np.pi / 2])
    np.testing.assert_allclose(poses[0], np.eye(4))
    np.testing.assert_allclose(poses[1][:3, 3], [0.0, 0.1, 0.05], atol=1e-15)
    np.testing.assert_allclose(poses[1][:3, :3] @ [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], atol=1e-15)


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_b_matrix_is_the_derivative_of_positions_and_orientations(
    rng, n, gravity, random_axes
) -> None:
    model = random_model(rng, n, gravity, random_axes)
    q, _, _ = random_state(rng, n)
    b = sd.b_matrix(model, q).reshape(n, 6, n)
    h = 1e-6
    for k in range(n):
        dq = np.zeros(n)
        dq[k] = h
        plus, minus = sd.link_poses(model, q + dq), sd.link_poses(model, q - dq)
        d_pos = (plus[1:, :3, 3] - minus[1:, :3, 3]) / (2 * h)
        # body-frame angular velocity: vee(R^T dR/dq_k)
        d_rot = (plus[1:, :3, :3] - minus[1:, :3, :3]) / (2 * h)
        rot = sd.link_poses(model, q)[1:, :3, :3]
        omega = vee(np.einsum("bji,bjk->bik", rot, d_rot))
        # central differences: error ~ h^2 |third derivative| ~ 1e-12 relative; 1e-7 is generous
        assert rel_err(b[:, :3, k], d_pos) < 1e-7
        assert rel_err(b[:, 3:, k], omega) < 1e-7


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_b_dot_is_the_time_derivative_of_b_along_a_motion(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    q, qd, _ = random_state(rng, n)
    h = 1e-6
    numeric = (sd.b_matrix(model, q + h * qd) - sd.b_matrix(model, q - h * qd)) / (2 * h)
    assert rel_err(sd.b_matrix_dot(model, q, qd), numeric) < 1e-7


def test_b_has_the_block_lower_triangular_shape_of_eq_57(rng) -> None:
    model = random_model(rng, 6)
    b = sd.b_matrix(model, random_state(rng, 6)[0]).reshape(6, 6, 6)
    for body in range(6):
        assert np.all(b[body, :, body + 1 :] == 0.0)
        # omega_b = sum_k R_b^T z_k qd_k: each column of the angular block is a unit axis
        norms = np.linalg.norm(b[body, 3:, : body + 1], axis=0)
        np.testing.assert_allclose(norms, 1.0, atol=1e-12)


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_mass_matrix_is_symmetric_positive_definite(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    m_star = sd.mass_matrix(model, random_state(rng, n)[0])
    assert rel_err(m_star, m_star.T) < 1e-14
    assert np.linalg.eigvalsh(m_star)[0] > 0.0


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_generalized_forces_equal_joint_torques_without_gravity_or_wrenches(
    rng, n, gravity, random_axes
) -> None:
    model = random_model(rng, n, gravity=False, random_axes=random_axes)
    q, _, tau = random_state(rng, n)
    assert rel_err(sd.generalized_forces(model, q, tau), tau) < 1e-12


def test_generalized_forces_of_a_wrench_equal_its_virtual_work(rng) -> None:
    # F* = B^T Q: the power of a body wrench equals F* . q_dot for any q_dot.
    n = 6
    model = random_model(rng, n, gravity=False)
    q, qd, _ = random_state(rng, n)
    wrenches = rng.normal(size=(n, 6))
    x_dot = (sd.b_matrix(model, q) @ qd).reshape(n, 6)
    power = np.sum(wrenches * x_dot)
    f_star = sd.generalized_forces(model, q, np.zeros(n), wrenches)
    assert abs(f_star @ qd - power) < 1e-12 * max(1.0, abs(power))


def test_kinetic_energy_is_half_x_dot_m_x_dot(rng) -> None:
    # eq. (65) from per-body velocities, against 1/2 qd^T M* qd
    n = 5
    model = random_model(rng, n)
    q, qd, _ = random_state(rng, n)
    x_dot = (sd.b_matrix(model, q) @ qd).reshape(n, 6)
    by_body = sum(
        0.5 * model.masses[b + 1] * x_dot[b, :3] @ x_dot[b, :3]
        + 0.5 * x_dot[b, 3:] @ model.inertias[b + 1] @ x_dot[b, 3:]
        for b in range(n)
    )
    assert abs(sd.kinetic_energy(model, q, qd) - by_body) < 1e-14


def test_hat_and_rotation_helpers_agree_with_scipy(rng) -> None:
    from snake_dynamics.mfm import axis_rotation

    v, w = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(hat(v) @ w, np.cross(v, w), atol=1e-15)
    axis = v / np.linalg.norm(v)
    np.testing.assert_allclose(
        axis_rotation(axis, 0.7), Rotation.from_rotvec(0.7 * axis).as_matrix(), atol=1e-15
    )


def test_relative_frame_connection_is_the_product_of_eq_48(rng) -> None:
    """E^(k/k-1) = T(l_{k-1}) [[Rot(a_k, theta), 0], [0, 1]] T(l_k), multiplied out here."""
    from snake_dynamics.mfm import axis_rotation, frame_connection
    from snake_dynamics.mfm.kinematics import relative_frame_connection

    model = random_model(rng, 4)
    for k in range(1, 5):
        theta = float(rng.uniform(-2, 2))
        rotation = frame_connection(axis_rotation(model.axes[k - 1], theta), np.zeros(3))
        before = frame_connection(np.eye(3), model.offsets[k - 1])
        after = frame_connection(np.eye(3), model.offsets[k])
        np.testing.assert_allclose(
            relative_frame_connection(model, k, theta), before @ rotation @ after, atol=1e-15
        )


def test_bad_states_raise_state_errors(rng) -> None:
    model = random_model(rng, 4)
    with pytest.raises(sd.StateError, match=r"q must have shape \(4,\)"):
        sd.mass_matrix(model, np.zeros(3))
    with pytest.raises(sd.StateError, match="qd must be finite"):
        sd.bias_forces(model, np.zeros(4), [0.0, np.nan, 0.0, 0.0])
    with pytest.raises(sd.StateError, match="wrenches"):
        sd.generalized_forces(model, np.zeros(4), np.zeros(4), np.zeros((4, 3)))

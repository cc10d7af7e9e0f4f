"""The floating-base MFM (docs/mfm.md, "The floating base", eqs. 221-230) against two
independent rigid-body libraries loaded from our URDF with a 6-DOF root: Pinocchio (free
flyer) and MuJoCo (free joint on ``base_link``). No ground: M*, the bias forces and the
accelerations agree to 1e-9 relative.

Frames: :func:`snake_dynamics.urdf.to_urdf` puts ``base_link``'s frame at the tail's CM with
the tail's axes (its ``<inertial>`` origin is 0), so both libraries' root frame is the tail
frame and no lever arm enters the velocity maps (asserted: with the origin at c from the CM,
the origin's velocity would be v_0 - w_0 x c). Both number the joints in chain order.

Signs: ours is M* nu' + N* nu = F*(tau) with F* = Bᵀ Q, gravity in Q (eq. 227); the
libraries' is M a + h = tau with h = C v - g, so in our coordinates h = N* nu - F*(0).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, NamedTuple

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation
from support.models import MODEL_CASES, random_model, random_state, rel_err

import snake_dynamics as sd
from dynamics.mfm.test_oracles import TOL
from snake_dynamics.floating import FastFloatingModel
from snake_dynamics.floating.literal import (
    floating_force_list,
    floating_forward_dynamics,
    floating_terms,
)
from snake_dynamics.mfm import hat
from snake_dynamics.urdf import to_urdf

pin = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

FloatArray = NDArray[np.float64]
STATES = 3  # random states per model


class FloatingCase(NamedTuple):
    """A random floating state, the torques on it and the MFM's answers there.

    Attributes:
        position: x_0, the tail's CM [m], shape (3,).
        rotation: R_0.
        q: joint angles [rad], shape (n,).
        nu: [v_0; w_0 (tail frame); q_dot], shape (6+n,).
        tau: joint torques [N m], shape (n,).
        m_star: M* (eq. 224), shape (6+n, 6+n).
        h: N* nu - F*(0), Coriolis/centrifugal less gravity, shape (6+n,).
        nu_dot: [v_0'; w_0'; q_ddot] (eq. 227), shape (6+n,).
    """

    position: FloatArray
    rotation: Rotation
    q: FloatArray
    nu: FloatArray
    tau: FloatArray
    m_star: FloatArray
    h: FloatArray
    nu_dot: FloatArray


def floating_case(rng: np.random.Generator, model: sd.SnakeModel) -> FloatingCase:
    """A random base pose (uniform R_0), base velocity, joint state and torques, with M*,
    h and nu' from :mod:`snake_dynamics.floating.literal`."""
    n = model.n_joints
    q, qd, tau = random_state(rng, n)
    position = rng.uniform(-1.0, 1.0, 3)
    rotation = Rotation.random(rng=rng)
    nu = np.concatenate([rng.uniform(-1.0, 1.0, 3), rng.uniform(-2.0, 2.0, 3), qd])
    r0 = rotation.as_matrix()
    terms = floating_terms(model, r0, q, nu)
    h = terms.bias - terms.b.T @ floating_force_list(model, np.zeros(n))
    nu_dot = floating_forward_dynamics(model, r0, q, nu, tau, terms=terms)
    return FloatingCase(position, rotation, q, nu, tau, terms.m_star, h, nu_dot)


def pin_free_model(model: sd.SnakeModel) -> tuple[Any, Any]:
    """Pinocchio's model of our URDF on a free-flyer root, under the model's gravity."""
    pm = pin.buildModelFromXML(to_urdf(model), pin.JointModelFreeFlyer())
    pm.gravity.linear[:] = model.gravity
    assert (pm.nq, pm.nv) == (7 + model.n_joints, 6 + model.n_joints)
    assert list(pm.names)[2:] == model.joint_names, "joints in chain order"
    assert np.all(pm.inertias[1].lever == 0.0), "base_link's frame sits at the tail's CM"
    return pm, pm.createData()


def mujoco_free_model(model: sd.SnakeModel) -> tuple[Any, Any]:
    """MuJoCo's model of our URDF with a free joint on base_link; no contacts, no limits.

    Built through MjSpec from the URDF text (test_oracles.mujoco_model compiles the fixed
    chain, and mj_saveLastXML would round its numbers to 6 digits)."""
    options = '<mujoco><compiler discardvisual="true" fusestatic="false"/></mujoco>'
    xml = re.sub(r"(<robot [^>]*>)", lambda m: m.group(1) + options, to_urdf(model), count=1)
    spec = mujoco.MjSpec.from_string(xml)
    spec.body("base_link").add_freejoint()
    mm = spec.compile()
    mm.opt.gravity[:] = model.gravity
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    assert (mm.nq, mm.nv) == (7 + model.n_joints, 6 + model.n_joints)
    assert [mm.joint(k).name for k in range(1, mm.njnt)] == model.joint_names
    base = mm.body("base_link").id
    assert np.all(mm.body_ipos[base] == 0.0), "base_link's frame sits at the tail's CM"
    assert np.all(mm.dof_armature == 0.0) and np.all(mm.dof_damping == 0.0)
    return mm, mujoco.MjData(mm)


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_floating_dynamics_match_pinocchio(rng, n, gravity, random_axes) -> None:
    """Pinocchio's free flyer: q = [x_0; quat (x, y, z, w); q], v = [v; w (LOCAL); q_dot].

    Its root frame is the tail's frame at the CM, so v = nu exactly (the LOCAL linear
    velocity is v_0 [m/s], the angular w_0 [rad/s]); its base acceleration is the rate of
    those LOCAL components (the body-fixed spatial acceleration), as our v_0' and w_0' are.
    So M, h = rnea(q, v, 0) and aba compare with no transform."""
    model = random_model(rng, n, gravity, random_axes)
    pm, pd = pin_free_model(model)
    for _ in range(STATES):
        case = floating_case(rng, model)
        config = np.concatenate([case.position, case.rotation.as_quat(), case.q])
        m_pin = pin.crba(pm, pd, config)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        assert rel_err(case.m_star, m_pin) < TOL
        h_pin = pin.rnea(pm, pd, config, case.nu, np.zeros(6 + n))
        assert rel_err(case.h, h_pin) < TOL
        torques = np.concatenate([np.zeros(6), case.tau])
        assert rel_err(case.nu_dot, pin.aba(pm, pd, config, case.nu, torques)) < TOL


def mujoco_velocity_map(case: FloatingCase) -> tuple[FloatArray, FloatArray]:
    """T with qvel = T nu, and T' nu, for MuJoCo's free joint.

    Its qvel is [origin velocity (WORLD) m/s; w (LOCAL) rad/s; q_dot]; the origin is the
    tail's CM, so qvel = [R_0 v_0; w_0; q_dot]: T = blockdiag(R_0, I). Differentiating,
    qacc = T nu' + T' nu with T' nu = [R_0 (w_0 x v_0); 0; 0] (R_0' = R_0 hat(w_0))."""
    r0 = case.rotation.as_matrix()
    t = np.eye(case.nu.size)
    t[:3, :3] = r0
    t_dot_nu = np.zeros(case.nu.size)
    t_dot_nu[:3] = r0 @ hat(case.nu[3:6]) @ case.nu[:3]
    return t, t_dot_nu


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_floating_dynamics_match_mujoco(rng, n, gravity, random_axes) -> None:
    """MuJoCo's free joint: qpos = [x_0; quat (w, x, y, z); q], qvel = T nu.

    With M qacc + h = tau in MuJoCo's coordinates and qacc = T nu' + T' nu, multiplying by
    Tᵀ gives ours: M* = Tᵀ M T, N* nu - F*(0) = Tᵀ (h + M T' nu) and
    nu' = T⁻¹ (qacc - T' nu); Tᵀ leaves the torques [0; tau] as they are."""
    model = random_model(rng, n, gravity, random_axes)
    mm, md = mujoco_free_model(model)
    for _ in range(STATES):
        case = floating_case(rng, model)
        t, t_dot_nu = mujoco_velocity_map(case)
        md.qpos[:] = np.concatenate(
            [case.position, case.rotation.as_quat(scalar_first=True), case.q]
        )
        md.qvel[:] = t @ case.nu
        md.qfrc_applied[:] = np.concatenate([np.zeros(6), case.tau])
        mujoco.mj_forward(mm, md)
        m_mj = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, md, m_mj)
        assert rel_err(case.m_star, t.T @ m_mj @ t) < TOL
        assert rel_err(case.h, t.T @ (md.qfrc_bias + m_mj @ t_dot_nu)) < TOL
        assert rel_err(case.nu_dot, np.linalg.solve(t, md.qacc - t_dot_nu)) < TOL


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_floating_armature_matches_pinocchios(
    rng: np.random.Generator, n: int, gravity: bool, random_axes: bool
) -> None:
    """Eq. 471 on a free base: Pinocchio's ``armature`` on the joints' velocity entries (the
    free flyer's six stay 0). The literal M* and nu', the recursive ABA, and the prescribed
    joints' base acceleration and torques (from Pinocchio's M and h: M_bb a = -h_b -
    M_bj q_ddot, tau = M_jb a + M_jj q_ddot + h_j) all carry it."""
    model = dataclasses.replace(
        random_model(rng, n, gravity, random_axes), armature=rng.uniform(1e-4, 1e-2, n)
    )
    pm, _ = pin_free_model(model)
    pm.armature[6:] = model.armature
    pd = pm.createData()
    fast = FastFloatingModel(model)
    for _ in range(STATES):
        case = floating_case(rng, model)
        r0 = case.rotation.as_matrix()
        config = np.concatenate([case.position, case.rotation.as_quat(), case.q])
        m_pin = pin.crba(pm, pd, config)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        assert rel_err(case.m_star, m_pin) < TOL
        nu_dot_pin = pin.aba(pm, pd, config, case.nu, np.concatenate([np.zeros(6), case.tau]))
        assert rel_err(case.nu_dot, nu_dot_pin) < TOL
        assert rel_err(fast.forward_dynamics(r0, case.q, case.nu, case.tau), nu_dot_pin) < TOL
        qdd = rng.uniform(-2.0, 2.0, n)
        h = pin.rnea(pm, pd, config, case.nu, np.zeros(6 + n))
        accel = np.linalg.solve(m_pin[:6, :6], -h[:6] - m_pin[:6, 6:] @ qdd)
        tau = m_pin[6:, :6] @ accel + m_pin[6:, 6:] @ qdd + h[6:]
        got_accel, got_tau = fast.prescribed(r0, case.q, case.nu, qdd)
        assert rel_err(got_accel, accel) < TOL
        assert rel_err(got_tau, tau) < TOL

"""The literal MFM against two independent rigid-body libraries loaded from our URDF:
Pinocchio (ABA, CRBA, frame placements and Jacobians) and MuJoCo (qacc, body frames)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from support.models import MODEL_CASES, random_model, random_state, rel_err

import snake_dynamics as sd
from snake_dynamics.mfm import recursive
from snake_dynamics.urdf import to_urdf

pin = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

TOL = 1e-9  # relative; double precision leaves ~1e-13 for n = 20 (cond(M*) ~ 1e3)


def pin_model(model: sd.SnakeModel):  # type: ignore[no-untyped-def]
    pm = pin.buildModelFromXML(to_urdf(model))
    pm.gravity.linear[:] = model.gravity
    assert pm.nq == model.n_joints, "revolute joints: one coordinate each"
    return pm, pm.createData()


def mujoco_model(model: sd.SnakeModel):  # type: ignore[no-untyped-def]
    # MuJoCo reads its compiler options from a <mujoco> element inside <robot>.
    options = '<mujoco><compiler discardvisual="true" fusestatic="false"/></mujoco>'
    xml = re.sub(r"(<robot [^>]*>)", lambda m: m.group(1) + options, to_urdf(model), count=1)
    mm = mujoco.MjModel.from_xml_string(xml)
    mm.opt.gravity[:] = model.gravity
    mm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    assert mm.nv == model.n_joints
    return mm, mujoco.MjData(mm)


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_forward_dynamics_and_mass_matrix_match_pinocchio(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    pm, pd = pin_model(model)
    for _ in range(3):
        q, qd, tau = random_state(rng, n)
        assert rel_err(sd.forward_dynamics(model, q, qd, tau), pin.aba(pm, pd, q, qd, tau)) < TOL
        m_pin = pin.crba(pm, pd, q)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        assert rel_err(sd.mass_matrix(model, q), m_pin) < TOL
        qdd = rng.uniform(-2.0, 2.0, n)
        assert rel_err(sd.inverse_dynamics(model, q, qd, qdd), pin.rnea(pm, pd, q, qd, qdd)) < TOL


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_frames_and_b_matrix_match_pinocchio(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    pm, pd = pin_model(model)
    q, _, _ = random_state(rng, n)
    pin.forwardKinematics(pm, pd, q)
    pin.computeJointJacobians(pm, pd, q)
    poses = sd.link_poses(model, q)
    b = sd.b_matrix(model, q).reshape(n, 6, n)
    for k in range(1, n + 1):
        placement = pd.oMi[k]
        com = placement.act(pm.inertias[k].lever)
        assert rel_err(poses[k, :3, :3], placement.rotation) < TOL
        assert rel_err(poses[k, :3, 3], com) < TOL
        jac = pin.getJointJacobian(pm, pd, k, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        j_lin, j_ang = jac[:3], jac[3:]
        # velocity of the CM = velocity of the joint origin + omega x (CM - origin)
        j_com = j_lin - np.cross(com - placement.translation, j_ang.T).T
        assert rel_err(b[k - 1, :3], j_com) < TOL
        assert rel_err(b[k - 1, 3:], placement.rotation.T @ j_ang) < TOL


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_forward_dynamics_and_frames_match_mujoco(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    mm, md = mujoco_model(model)
    for _ in range(3):
        q, qd, tau = random_state(rng, n)
        md.qpos[:], md.qvel[:], md.qfrc_applied[:] = q, qd, tau
        mujoco.mj_forward(mm, md)
        assert rel_err(sd.forward_dynamics(model, q, qd, tau), md.qacc) < TOL
        poses = sd.link_poses(model, q)
        b = sd.b_matrix(model, q).reshape(n, 6, n)
        for k in range(1, n + 1):
            body = mm.body(f"link_{k}").id
            rot = md.xmat[body].reshape(3, 3)  # row-major
            assert rel_err(poses[k, :3, :3], rot) < TOL
            assert rel_err(poses[k, :3, 3], md.xipos[body]) < TOL
            jacp, jacr = np.zeros((3, n)), np.zeros((3, n))
            mujoco.mj_jacBodyCom(mm, md, jacp, jacr, body)
            assert rel_err(b[k - 1, :3], jacp) < TOL
            assert rel_err(b[k - 1, 3:], rot.T @ jacr) < TOL


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_armature_matches_pinocchios(
    rng: np.random.Generator, n: int, gravity: bool, random_axes: bool
) -> None:
    """Eq. 471: Pinocchio's ``model.armature`` is the same diagonal; the literal and the
    recursive M*, q_ddot and tau all carry it. The armature is of the links' own size
    (1e-4..1e-2 kg m^2 against M*_kk of 1e-4..1e-1), so a path that left it out would be
    off by far more than TOL."""
    model = dataclasses.replace(
        random_model(rng, n, gravity, random_axes), armature=rng.uniform(1e-4, 1e-2, n)
    )
    pm, pd = pin_model(model)
    pm.armature[:] = model.armature
    pd = pm.createData()
    for _ in range(3):
        q, qd, tau = random_state(rng, n)
        qdd_pin = pin.aba(pm, pd, q, qd, tau)
        m_pin = pin.crba(pm, pd, q)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        qdd = rng.uniform(-2.0, 2.0, n)
        tau_pin = pin.rnea(pm, pd, q, qd, qdd)
        for path in (sd.mfm, recursive):
            assert rel_err(path.forward_dynamics(model, q, qd, tau), qdd_pin) < TOL
            assert rel_err(path.mass_matrix(model, q), m_pin) < TOL
            assert rel_err(path.inverse_dynamics(model, q, qd, qdd), tau_pin) < TOL
        without = dataclasses.replace(model, armature=np.zeros(n))
        assert rel_err(sd.forward_dynamics(without, q, qd, tau), qdd_pin) > 100 * TOL
    kinetic = recursive.energies(model, q, qd)[0, 0]
    assert kinetic == pytest.approx(0.5 * qd @ m_pin @ qd, rel=TOL)

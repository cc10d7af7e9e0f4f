"""The arm's equations of motion against independent references.

References: Pinocchio's ABA on the same chain with every link rigid (the rigid limit: the
elastic coordinates held at zero, which stiffer links approach), Lagrange's equations by
finite differences of the kinetic and potential energy the kernel reports (the velocity
products and gravity of h), and the conservation of energy with no damping and no input,
whose drift must fall as RK4's fourth order.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from snake_dynamics.flexible import FlexibleArm, FlexibleModel, PDManoeuvre, paper_arm
from snake_dynamics.flexible.model import ElasticLink, rigid_arm_inertias

RNG = np.random.default_rng(20260112)


def pinocchio_chain(arm: FlexibleArm) -> tuple[pin.Model, pin.Data]:
    """The arm with every link rigid, as Pinocchio builds it: revolute z joints after each
    link's fixed rotation, at the parent's distal end, each link's undeformed inertia."""
    model = pin.Model()
    model.gravity = pin.Motion(np.array(arm.gravity), np.zeros(3))
    parent, offset = 0, np.zeros(3)
    for i, (link, (mass, com, inertia)) in enumerate(
        zip(arm.links, rigid_arm_inertias(arm), strict=True)
    ):
        placement = pin.SE3(np.array(link.joint_rotation, dtype=float), offset)
        parent = model.addJoint(parent, pin.JointModelRZ(), placement, f"joint_{i + 1}")
        model.appendBodyToJoint(parent, pin.Inertia(mass, com, inertia), pin.SE3.Identity())
        offset = (
            np.array([link.length, 0.0, 0.0])
            if isinstance(link, ElasticLink)
            else np.array(link.distal, dtype=float)
        )
    model.armature = np.array([link.armature for link in arm.links])
    return model, model.createData()


@pytest.fixture(scope="module")
def arm_model() -> FlexibleModel:
    return FlexibleModel(paper_arm())


@pytest.mark.parametrize("linearized", [False, True])
def test_rigid_limit_follows_pinocchio_aba(arm_model: FlexibleModel, linearized: bool) -> None:
    pmodel, pdata = pinocchio_chain(arm_model.arm)
    nj, n = arm_model.n_joints, arm_model.n
    worst = 0.0
    for _ in range(20):
        q = np.zeros(n)
        u = np.zeros(n)
        q[:nj] = RNG.uniform(-np.pi, np.pi, nj)
        u[:nj] = RNG.normal(0.0, 2.0, nj)
        tau = RNG.normal(0.0, 5.0, nj)
        m, h = arm_model.terms(q, u, linearized)
        # the elastic coordinates held at zero: the rigid block alone
        ours = np.linalg.solve(m[:nj, :nj], tau - h[:nj])
        ref = pin.aba(pmodel, pdata, q[:nj], u[:nj], tau)
        worst = max(worst, float(np.abs(ours - ref).max() / np.abs(ref).max()))
    print(f"rigid limit: worst relative difference {worst:.1e}")
    assert worst < 1e-8, worst


@pytest.mark.slow
def test_stiffer_links_approach_the_rigid_chain() -> None:
    """E and G x 1e2 and x 1e4: the joints of a 0.1 s swing under gravity, no input, follow
    Pinocchio's rigid chain, closer as the links stiffen. Measured: 4.9e-6 and 5.7e-7 rad,
    the error falling about as 1/sqrt(stiffness) = 1/omega (the vibration the sudden
    start under gravity excites); asserted: a factor of 5 and below 1e-6 rad."""
    errors = []
    for scale in (1e2, 1e4):
        model = FlexibleModel(paper_arm(damping=0.05, stiffness_scale=scale))
        pmodel, pdata = pinocchio_chain(model.arm)
        nj = model.n_joints
        q0 = np.zeros(model.n)
        q0[:nj] = [0.3, 0.6, 1.8, 0.4]
        man = PDManoeuvre(np.zeros(nj), np.zeros(nj), np.zeros(1), q0[None, :nj])
        dt = model.stable_step(q0)
        t_end = 0.1
        # the rigid chain, RK4 at a fine step
        q, v = q0[:nj].copy(), np.zeros(nj)
        steps = 2000
        h = t_end / steps

        def f(
            x: np.ndarray, y: np.ndarray, pm: pin.Model = pmodel, pd: pin.Data = pdata
        ) -> np.ndarray:
            return np.asarray(pin.aba(pm, pd, x, y, np.zeros(len(x))))

        for _ in range(steps):
            k1 = f(q, v)
            k2 = f(q + h / 2 * v, v + h / 2 * k1)
            k3 = f(q + h / 2 * (v + h / 2 * k1), v + h / 2 * k2)
            k4 = f(q + h * (v + h / 2 * k2), v + h * k3)
            q, v = (
                q + h * (v + h / 6 * (k1 + k2 + k3)),
                v + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4),
            )
        final = model.simulate(man.inputs(dt, t_end), q0, np.zeros(model.n)).q[-1, :nj]
        errors.append(float(np.abs(final - q).max()))
    assert errors[1] < errors[0] / 5 and errors[1] < 1e-6, errors


def test_velocity_products_and_gravity_are_lagrange_s(arm_model: FlexibleModel) -> None:
    n = arm_model.n
    q = np.r_[RNG.uniform(-1, 1, 4), RNG.normal(0, 5e-3, n - 4)]
    u = np.r_[RNG.normal(0, 1, 4), RNG.normal(0, 0.05, n - 4)]
    k = arm_model.arrays.stiffness
    eps = 1e-6

    def kinetic(x: np.ndarray, v: np.ndarray) -> float:
        return arm_model.energy(x, v)[0]

    def gravity(x: np.ndarray) -> float:
        return arm_model.energy(x, np.zeros(n))[1] - 0.5 * x @ k @ x

    eye = np.eye(n)
    m_dot = (arm_model.mass_matrix(q + eps * u) - arm_model.mass_matrix(q - eps * u)) / (2 * eps)
    dt_dq = np.array([(kinetic(q + eps * e, u) - kinetic(q - eps * e, u)) / (2 * eps) for e in eye])
    dv_dq = np.array([(gravity(q + eps * e) - gravity(q - eps * e)) / (2 * eps) for e in eye])
    h = arm_model.terms(q, u)[1]
    expected = m_dot @ u - dt_dq + dv_dq
    assert np.abs(h - expected).max() < 1e-6 * np.abs(expected).max()


def test_energy_is_conserved_to_rk4_s_order() -> None:
    model = FlexibleModel(paper_arm(damping=0.0))
    nj, n = model.n_joints, model.n
    q0 = np.zeros(n)
    q0[:nj] = [0.2, 0.7, 1.5, 0.3]
    q0[nj:] = 1e-4 * np.tile([1.0, 0.0], (n - nj) // 2)  # the first mode of each kind
    u0 = np.r_[0.5, -0.3, 0.4, 1.0, np.zeros(n - nj)]
    man = PDManoeuvre(np.zeros(nj), np.zeros(nj), np.zeros(1), q0[None, :nj])
    e0 = sum(model.energy(q0, u0))
    dt = model.stable_step(q0)
    drifts = []
    # at dt / 2 the fastest torsion modes are not yet in RK4's asymptotic range; measured
    # drifts over 0.05 s at dt/2 .. dt/16: 4.3e-6, 1.6e-6, 6.2e-8, 2.0e-9 J of 19 J
    for step in (dt / 4, dt / 8):
        run = model.simulate(man.inputs(step, 0.05), q0, u0)
        e = np.array([sum(model.energy(q, u)) for q, u in zip(run.q, run.u, strict=True)])
        drifts.append(float(np.abs(e - e0).max()))
    kinetic0 = model.energy(q0, u0)[0]
    assert drifts[0] < 1e-4 * kinetic0, drifts
    assert drifts[0] / drifts[1] > 10, drifts  # 16 for a fourth-order method

"""An independent nonlinear reference: the elastic link as a chain of rigid segments joined
by springs of the beam's stiffness (Pinocchio), converging to the assumed-mode model as the
segments grow in number (docs/flexible.md, "Kane's equations", the checks).

The chain is Hencky's: N hinges at the midpoints (j + 1/2) L/N, each a spring EI / (L/N)
holding the curvature of its segment; rigid pieces between them, the last one half long;
the mass ρA along them. Pinocchio gives its mass matrix (CRBA) and its gravity torques; its
bending frequencies and its static tip deflection under gravity converge at second order.
Measured, N = 5, 10, 20, 40, 80, against the model (3 xy modes): first frequency 9.3e-3,
2.3e-3, 5.9e-4, 1.6e-4, 5.0e-5; tip deflection 2.0e-2, 5.2e-3, 1.4e-3, 4.7e-4, 2.4e-4, the
last approaching the model's own 1.6e-4 from Euler-Bernoulli's q L^4 / 8 EI (three modes).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg

from snake_dynamics.flexible import ALUMINIUM, ElasticLink, FlexibleArm, FlexibleModel, Section

LENGTH, DIAMETER, G = 1.0, 0.01, 9.81
SECTION = Section.tube(DIAMETER, DIAMETER / 2)
RHO_A = ALUMINIUM.density * SECTION.area
EI = ALUMINIUM.young * SECTION.iz


def chain(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(first three bending frequencies [Hz], static tip deflection under gravity [m])."""
    a = LENGTH / n
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, -G, 0.0]), np.zeros(3))
    parent = 0
    for j in range(n):
        piece = a if j < n - 1 else a / 2
        mass = RHO_A * piece
        where = pin.SE3(np.eye(3), np.array([a if j else a / 2, 0.0, 0.0]))
        parent = model.addJoint(parent, pin.JointModelRZ(), where, f"hinge_{j}")
        inertia = np.diag([0.0, mass * piece**2 / 12, mass * piece**2 / 12])
        model.appendBodyToJoint(
            parent, pin.Inertia(mass, np.array([piece / 2, 0.0, 0.0]), inertia), pin.SE3.Identity()
        )
    data = model.createData()
    stiffness = np.eye(n) * EI / a
    m = pin.crba(model, data, np.zeros(n))
    m = np.triu(m) + np.triu(m, 1).T
    freqs = np.sqrt(scipy.linalg.eigh(stiffness, m, eigvals_only=True)[:3]) / (2 * math.pi)
    theta = np.linalg.solve(stiffness, -pin.computeGeneralizedGravity(model, data, np.zeros(n)))
    tip = sum(theta[j] * (LENGTH - (j + 0.5) * a) for j in range(n))
    return freqs, np.array(tip)


@pytest.fixture(scope="module")
def model_values() -> tuple[np.ndarray, float]:
    link = ElasticLink(LENGTH, ALUMINIUM, SECTION, 1, 3, 1)
    model = FlexibleModel(FlexibleArm((link,), gravity=(0.0, -G, 0.0)))
    q = np.zeros(model.n)
    m, h = model.terms(q, q)
    k = model.arrays.stiffness
    xy = slice(2, 5)  # the joint, one torsion mode, then the three xy modes
    freqs = np.sqrt(scipy.linalg.eigh(k[xy, xy], m[xy, xy], eigvals_only=True)) / (2 * math.pi)
    tip = float(np.linalg.solve(k[xy, xy], -h[xy]).sum())  # psi(L) = 1: the tip is the sum
    return freqs, tip


def test_segment_chain_converges_to_the_model_at_second_order(
    model_values: tuple[np.ndarray, float],
) -> None:
    freqs, tip = model_values
    assert tip == pytest.approx(-RHO_A * G * LENGTH**4 / (8 * EI), rel=5e-4)  # Euler-Bernoulli
    errors = []
    for n in (10, 20, 40):
        chain_freqs, chain_tip = chain(n)
        errors.append(
            (abs(chain_freqs[0] / freqs[0] - 1), abs(chain_freqs[1] / freqs[1] - 1),
             abs(chain_tip / tip - 1))
        )  # fmt: skip
    e = np.array(errors)
    order = np.log2(e[:-1] / e[1:])
    assert (order[0] > 1.7).all(), (e, order)  # 2 for Hencky's chain
    assert (e[-1] < 1e-3).all(), e

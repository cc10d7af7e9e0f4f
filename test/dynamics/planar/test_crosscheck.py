"""The wheeled snake (Kane), the kinematic snake (local connection) and the floating MFM
snake on the ground describe one 3-link wheeled snake (docs/mfm.md, "Cross-checks between
the wheeled, kinematic and floating snakes", eqs. 420-427).

References, each written independently of the model it checks: the kinematic snake's
link placement (its eq. 307) for the frame mapping; its body velocity from the local
connection (eq. 311) and its reconstruction (Magnus, eq. 306) for the wheeled snake's
recursions and kinematics; that same reconstruction for the floating snake, whose
friction across the links is made stiffer, one coefficient at a time.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from snake_dynamics.errors import ModelError, SingularConfigurationError
from snake_dynamics.floating import FloatingState, world_poses
from snake_dynamics.planar import WheeledSnake, link_positions, link_speeds, se2
from snake_dynamics.planar import crosscheck as wc
from snake_dynamics.planar import kinematic as ks

RNG = np.random.default_rng(20240421)

#: (gait, link length [m]): the paper's gait (near the singular line: it moves 6 L a
#: cycle), one run backwards round its loop, and a large-amplitude one.
GAITS = [
    (ks.LateralUndulation(), 1.0),
    (ks.LateralUndulation(math.radians(40), math.radians(90), math.pi, -1), 0.2),
    (ks.LateralUndulation(math.radians(70), math.radians(60), 2.0), 0.35),
]
#: The gait of the convergence runs (period 2 s), with the defaults of
#: wc.convergence_error (L = 0.2 m, m = 0.5 kg, radius 2 mm).
CONVERGENCE_GAIT = ks.LateralUndulation(math.radians(40), math.radians(90), math.pi)
MASS = 0.5


def _planar(g: np.ndarray) -> np.ndarray:
    return se2.coordinates(g)


def _falling(values: list[float]) -> bool:
    """Each value below the one before."""
    return all(a > b for a, b in itertools.pairwise(values))


# ------------------------------------------------------------ the frame mapping
def test_the_three_models_place_the_links_alike() -> None:
    """Eq. 420 against each model's own geometry: with the wheeled link 1 put where the
    kinematic snake's link 3 is and the headings of eq. 420, eq. 401 puts the wheeled
    links 2 and 3 on the kinematic links 2 and 1 (eq. 307); the MFM twin at q = (α2, α1),
    its tail turned about the vertical, has bodies 0, 1, 2 where links 3, 2, 1 are,
    seen from the middle link. To rounding (1e-14)."""
    length = 0.3
    snake = WheeledSnake.uniform(3, length=length)
    twin = wc.floating_twin(length, MASS, 0.002, wc.viscous_ground(1.0))
    for _ in range(20):
        r = RNG.uniform(-2.5, 2.5, 2)
        g = se2.pose(*RNG.normal(size=2), RNG.uniform(-3, 3))
        kinematic = ks.link_poses(g, r, length)  # links 1 (head), 2, 3
        theta = wc.wheeled_headings(_planar(g)[2], r)
        q = np.concatenate([theta, kinematic[2][:2, 2]])
        centres = link_positions(snake, q)  # tail to head
        for k in range(3):
            head_first = kinematic[2 - k]
            np.testing.assert_allclose(centres[k], head_first[:2, 2], atol=1e-14)
            expected = math.atan2(head_first[1, 0], head_first[0, 0])
            assert math.remainder(theta[k] - expected, 2 * math.pi) == pytest.approx(0, abs=1e-14)

        yaw = Rotation.from_euler("z", RNG.uniform(-3, 3)).as_quat()
        state = FloatingState(np.array([0.4, -0.2, 0.002]), yaw, wc.joint_angles(r), np.zeros(8))
        rotations, body_centres = world_poses(twin, state)
        bodies = [
            se2.pose(c[0], c[1], math.atan2(rot[1, 1], rot[0, 1]))
            for rot, c in zip(rotations, body_centres, strict=True)
        ]
        np.testing.assert_allclose(
            _planar(bodies[1]), wc.floating_middle_pose(twin, state.position, yaw, state.q)
        )
        for b in range(3):
            seen = se2.inverse(bodies[1]) @ bodies[b]
            expected_seen = se2.inverse(kinematic[1]) @ kinematic[2 - b]
            np.testing.assert_allclose(seen, expected_seen, atol=1e-14)


# --------------------------------------------------- Kane against the local connection
@pytest.mark.parametrize(("gait", "length"), GAITS)
def test_the_wheeled_middle_link_has_the_kinematic_body_velocity(
    gait: ks.LateralUndulation, length: float
) -> None:
    """u from the joint rates (eq. 422), then V_2 and ω_2 by Kane's recursions (eq. 403),
    equal the local connection's ξ (eq. 311) at 2000 times round the gait, to 1e-12 of
    max(|ξ|, 1). The points within |sin ψ| < 1e-3 of the singular line are left out:
    the 2x2 solve's condition, ~1/|sin ψ| <= 1e3, times eps is then 2e-13 (measured
    9e-14, on the paper's gait)."""
    snake = WheeledSnake.uniform(3, length=length)
    checked, worst = 0, 0.0
    for t in np.linspace(0.0, gait.period, 2000, endpoint=False):
        r, r_dot = gait.shape(t), gait.shape_velocity(t)
        if abs(math.sin(0.5 * (r[0] - r[1]))) < 1e-3:
            continue
        xi = ks.body_velocity(r, r_dot, length)
        error = np.max(np.abs(wc.wheeled_body_velocity(snake, r, r_dot) - xi))
        worst = max(worst, error / max(float(np.max(np.abs(xi))), 1.0))
        checked += 1
    assert checked > 1900
    assert worst < 1e-12


def test_the_joint_rates_fix_the_speeds_only_off_the_singular_line() -> None:
    """The 2x2 system of eq. 422 has determinant D / h, D of eq. 310 (L = 0.2 m): on
    α1 = α2 (the straight snake too) it is singular, as the kinematic snake's connection
    is; a snake of other than 3 links has no square system; off the line, u gives back
    the joint rates asked for."""
    snake = WheeledSnake.uniform(3)
    with pytest.raises(SingularConfigurationError, match="singular line"):
        wc.shape_speeds(snake, (0.3, 0.3), (0.1, -0.1))
    with pytest.raises(SingularConfigurationError):
        ks.local_connection((0.3, 0.3))
    with pytest.raises(ModelError, match="n = 4"):
        wc.shape_speeds(WheeledSnake.uniform(4), (0.3, -0.2), (0.1, 0.2))
    for _ in range(10):
        r = RNG.uniform(-2.5, 2.5, 2)
        partials = link_speeds(snake, wc.wheeled_headings(0.0, r), (0.0, 0.0)).rate_partials
        determinant = (math.sin(r[0]) - math.sin(r[1]) + math.sin(r[0] - r[1])) / 0.1  # D / h
        assert np.linalg.det(np.diff(partials, axis=0)) == pytest.approx(determinant, rel=1e-12)
    u = wc.shape_speeds(snake, (0.5, -0.4), (0.3, 0.7))
    rates = link_speeds(snake, wc.wheeled_headings(0.0, (0.5, -0.4)), u).rate
    np.testing.assert_allclose(np.diff(rates), wc.joint_angles((0.3, 0.7)), atol=1e-15)


@pytest.mark.parametrize(("gait", "length"), GAITS)
def test_the_wheeled_kinematics_travel_as_the_kinematic_snake(
    gait: ks.LateralUndulation, length: float
) -> None:
    """One cycle of the wheeled snake's kinematics (eq. 423, DOP853 at rtol = atol =
    1e-12) moves the middle link by cycle_displacement (Magnus with 4000 steps, error
    ~1e-13) to 1e-9 m and rad: a thousand times the integrator's tolerance (measured
    8e-11 on the paper's 5.97 m)."""
    snake = WheeledSnake.uniform(3, length=length)
    expected = ks.cycle_displacement(gait, length, steps=4000)
    assert np.linalg.norm(expected[:2]) > 0.1 * length
    np.testing.assert_allclose(
        wc.wheeled_cycle_displacement(snake, gait), expected, rtol=0, atol=1e-9
    )


# ------------------------------------------------ the floating snake converges to it
@functools.cache
def _viscous(coefficient: float) -> wc.Convergence:
    return wc.convergence_error(wc.viscous_ground(coefficient), CONVERGENCE_GAIT)


@functools.cache
def _coulomb(mu: float, velocity_scale: float) -> wc.Convergence:
    return wc.convergence_error(wc.coulomb_ground(mu, velocity_scale), CONVERGENCE_GAIT)


def test_viscous_friction_across_the_links_converges_to_the_wheels() -> None:
    """c_n = 10 .. 1e4 N s/m (eq. 425): the middle link's largest position and heading
    errors over the second period (eq. 426) fall at every step, and as 1/c_n once the
    relaxation time m/c_n is short against the period (eq. 427: a tenfold c_n, 8.4
    times smaller, measured). At 1e4 N s/m they are under 1 mm (0.5 % of L) and 1 mrad
    (measured 6.7e-5 m, 1.3e-4 rad). The step is RK4's stable step (eq. 237); halving it
    changes the errors at 1e4 N s/m by 4e-9 relative: they are the friction's, not RK4's."""
    runs = [_viscous(c) for c in (10.0, 100.0, 1000.0, 10000.0)]
    position = [r.position_error for r in runs]
    heading = [r.heading_error for r in runs]
    assert _falling(position), position
    assert _falling(heading), heading
    assert 5.0 < position[-2] / position[-1] < 20.0
    assert position[-1] < 1e-3 and heading[-1] < 1e-3


@pytest.mark.slow
def test_coulomb_friction_across_the_links_converges_to_the_wheels() -> None:
    """μ_across = 0.125 .. 8 at v_s = m g / 5000 N s/m (about 1 mm/s), i.e. the linear
    range's damping μ m g / v_s = 5000 μ N s/m (eq. 425): the errors fall at every step;
    at μ = 8 they are under 1 mm and 1 mrad (measured 1.8e-5 m, 3.7e-5 rad). At μ = 2
    (c = 1e4 N s/m) the error equals the viscous run's at c_n = 1e4 N s/m to 2 % (measured
    0.2 %): the friction stays in tanh's linear range (|tanh| <= 0.025 at the contacts,
    measured), so it acts as viscous friction at the contact point 2 mm below the CM."""
    velocity_scale = MASS * wc.GRAVITY / 5000.0
    runs = [_coulomb(mu, velocity_scale) for mu in (0.125, 0.5, 2.0, 8.0)]
    position = [r.position_error for r in runs]
    heading = [r.heading_error for r in runs]
    assert _falling(position), position
    assert _falling(heading), heading
    assert position[-1] < 1e-3 and heading[-1] < 1e-3
    viscous = _viscous(10000.0)
    assert runs[2].position_error == pytest.approx(viscous.position_error, rel=0.02)
    assert runs[2].heading_error == pytest.approx(viscous.heading_error, rel=0.02)

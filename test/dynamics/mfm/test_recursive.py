"""The fast (recursive, compiled) MFM against the literal MFM, quantity by quantity."""

from __future__ import annotations

import numpy as np
import pytest
from support.models import MODEL_CASES, random_model, random_state, rel_err

import snake_dynamics as sd
from snake_dynamics.mfm import integrators, kinetics, recursive

TOL = 1e-10  # relative


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_fast_forms_equal_literal_forms(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    for _ in range(3):
        q, qd, tau = random_state(rng, n)
        wrenches = rng.normal(scale=0.3, size=(n, 6))
        qdd = rng.uniform(-2.0, 2.0, n)
        assert rel_err(recursive.mass_matrix(model, q), kinetics.mass_matrix(model, q)) < TOL
        assert (
            rel_err(recursive.bias_forces(model, q, qd), kinetics.bias_forces(model, q, qd)) < TOL
        )
        assert (
            rel_err(
                recursive.generalized_forces(model, q, tau, wrenches),
                kinetics.generalized_forces(model, q, tau, wrenches),
            )
            < TOL
        )
        assert (
            rel_err(
                recursive.forward_dynamics(model, q, qd, tau, wrenches),
                kinetics.forward_dynamics(model, q, qd, tau, wrenches),
            )
            < TOL
        )
        assert (
            rel_err(
                recursive.inverse_dynamics(model, q, qd, qdd, wrenches),
                kinetics.inverse_dynamics(model, q, qd, qdd, wrenches),
            )
            < TOL
        )
        kin, pot = recursive.energies(model, q, qd)[0]
        assert abs(kin - kinetics.kinetic_energy(model, q, qd)) < TOL * max(1.0, kin)
        assert abs(pot - kinetics.potential_energy(model, q)) < TOL * max(1.0, abs(pot))


def test_fast_and_literal_simulations_agree(rng) -> None:
    model = random_model(rng, 6)
    gait = sd.make_gait("sidewinding", model)
    runs = [
        integrators.simulate_gait(model, gait, 0.05, 0.001, method=m) for m in ("fast", "literal")
    ]
    assert rel_err(runs[0].q, runs[1].q) < TOL
    assert rel_err(runs[0].tau, runs[1].tau) < TOL
    assert rel_err(runs[0].qdd, runs[1].qdd) < 1e-9


def test_servo_runs_agree_between_fast_and_literal(rng) -> None:
    model = random_model(rng, 4)
    gait = sd.make_gait("serpenoid", model)
    q0 = gait(0.0).q + 0.05  # start off the reference so the feedback acts
    servo = integrators.Servo(2.0, 0.05, gait)
    feed_forward = integrators.prescribed_torques(model, gait)
    runs = [
        integrators.simulate(
            model, q0, gait(0.0).qd, feed_forward, 0.2, 0.001, servo=servo, method=m
        )
        for m in ("fast", "literal")
    ]
    assert rel_err(runs[0].q, runs[1].q) < TOL
    # the servo pulls the joints back toward the reference
    err0 = np.abs(runs[0].q[0] - gait(0.0).q).max()
    err1 = np.abs(runs[0].q[-1] - gait(0.2).q).max()
    assert err1 < 0.5 * err0


@pytest.mark.parametrize(("n", "gravity", "random_axes"), MODEL_CASES)
def test_compiled_entry_equals_literal_forward_dynamics(rng, n, gravity, random_axes) -> None:
    model = random_model(rng, n, gravity, random_axes)
    packed, work, qdd = recursive.FastModel(model).packed, recursive.workspace(n), np.empty(n)
    states = [random_state(rng, n) for _ in range(3)]
    for q, qd, tau in states:  # one workspace reused: nothing is carried from call to call
        recursive.forward_dynamics_into(packed, work, q, qd, tau, qdd)
        assert rel_err(qdd, kinetics.forward_dynamics(model, q, qd, tau)) < TOL
    qs, qds = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    for row, energies in enumerate(recursive.energies(model, qs, qds)):
        kin = kinetics.kinetic_energy(model, qs[row], qds[row])
        assert abs(energies[0] - kin) < TOL * max(1.0, kin)


def test_compiled_entry_refuses_arrays_that_do_not_fit() -> None:
    model = sd.SnakeModel.uniform(4, 0.1, 0.1, 0.02)
    packed, zeros = recursive.FastModel(model).packed, np.zeros(4)
    with pytest.raises(sd.StateError, match="one float per joint"):
        recursive.forward_dynamics_into(
            packed, recursive.workspace(4), zeros, zeros, zeros[:3], zeros
        )
    with pytest.raises(sd.StateError, match="workspace"):
        recursive.forward_dynamics_into(packed, recursive.workspace(5), zeros, zeros, zeros, zeros)
    with pytest.raises(sd.StateError, match="packed model"):
        recursive.forward_dynamics_into(zeros, recursive.workspace(4), zeros, zeros, zeros, zeros)

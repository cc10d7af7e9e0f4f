"""The MFM snake as a rigid arm of this family gives the MFM's own M*, N* q_dot and
gravity forces (docs/flexible.md, "A snake in this family").

Reference: snake_dynamics.mfm.recursive (composite bodies and recursive Newton-Euler) and
mfm.kinetics.generalized_forces, written independently of this family's kernel, on the
robot config with mixed bodies and gravity switched on.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from snake_dynamics import SnakeModel
from snake_dynamics.errors import ModelError
from snake_dynamics.flexible import FlexibleModel
from snake_dynamics.flexible.snake import arm_from_snake, link_axes
from snake_dynamics.mfm import kinetics, recursive

ROOT = Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(48)


def test_rigid_snake_matches_the_mfm() -> None:
    snake = SnakeModel.from_yaml(ROOT / "config" / "paper_3d.yaml")
    snake = dataclasses.replace(snake, gravity=np.array([0.3, -1.2, -9.81]))
    model = FlexibleModel(arm_from_snake(snake))
    n = snake.n_joints
    for _ in range(5):
        q = RNG.uniform(-1.2, 1.2, n)
        qd = RNG.normal(0.0, 1.0, n)
        m, h = model.terms(q, qd)
        m_ref = recursive.mass_matrix(snake, q)
        h_ref = recursive.bias_forces(snake, q, qd) - kinetics.generalized_forces(
            snake, q, np.zeros(n)
        )
        assert np.abs(m - m_ref).max() < 1e-12 * np.abs(m_ref).max()
        assert np.abs(h - h_ref).max() < 1e-11 * np.abs(h_ref).max()


def test_a_roll_joint_is_refused() -> None:
    with pytest.raises(ModelError, match="across the body"):
        link_axes(np.array([0.0, 1.0, 0.0]))

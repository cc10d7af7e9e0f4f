"""Inverse and forward dynamics of a snake robot with the Moving Frame Method.

Loads the default robot (8 servos, config/robot.yaml), asks which joint torques produce a
given motion (docs/mfm.md eq. 81), checks that forward dynamics (eq. 84) gives the motion
back, and that the compiled O(n) recursion agrees with the literal MFM matrices.

    python examples/inverse_dynamics.py [ROBOT_YAML]
"""

import sys
from pathlib import Path

import numpy as np

from snake_dynamics import SnakeModel, forward_dynamics, inverse_dynamics, mass_matrix
from snake_dynamics.mfm import recursive

config = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1] / "config/robot.yaml"
model = SnakeModel.from_yaml(config)
n = model.n_joints

q = np.linspace(-0.4, 0.4, n)  # joint angles [rad]
q_dot = np.full(n, 0.5)  # joint rates [rad/s]
q_ddot = np.ones(n)  # the wanted joint accelerations [rad/s^2]

tau = inverse_dynamics(model, q, q_dot, q_ddot)  # M* q_ddot + N* q_dot (eq. 81)
for name, torque in zip(model.joint_names, tau, strict=True):
    print(f"{name}: tau = {torque:+.5f} N m")

print(f"M* is {n}x{n}, condition number {np.linalg.cond(mass_matrix(model, q)):.1f}")
error = np.max(np.abs(forward_dynamics(model, q, q_dot, tau) - q_ddot))
print(f"forward dynamics gives q_ddot back to {error:.1e} rad/s^2")
compiled = np.max(np.abs(recursive.inverse_dynamics(model, q, q_dot, q_ddot) - tau))
print(f"compiled recursion agrees to {compiled:.1e} N m")

"""The floating base under joints known only by their samples, compiled (eqs. 228, 239):
what the dynamics node runs beside its joint simulation on a floating robot.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.errors import SimulationError
from snake_dynamics.floating.literal import (
    BaseTracker,
    hermite_basis,
)
from snake_dynamics.floating.recursive import FastFloatingModel
from snake_dynamics.floating.rk4 import rk4_prescribed_steps
from snake_dynamics.floating.state import (
    FloatingState,
)
from snake_dynamics.model import SnakeModel

FloatArray = NDArray[np.float64]


class FastBaseTracker(BaseTracker):
    """:class:`floating.BaseTracker` on the compiled kernels: every step's Hermite joint
    motion (eq. 239) sampled at its three stage times at once (numpy), then one compiled RK4
    step per step (:func:`rk4_prescribed_steps`). What the dynamics node runs.

    Raises:
        SimulationError: a step the ground does not allow.
    """

    #: The Hermite basis (eq. 239) at the stage times s = 0, 1/2, 1 of a step.
    _STAGES = hermite_basis(np.array([0.0, 0.5, 1.0]))

    def __init__(self, model: SnakeModel, dt: float) -> None:
        super().__init__(model, dt)
        self._fast = FastFloatingModel(model)

    def _stages(self, qs: FloatArray, qds: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """q, q_dot, q_ddot at the three stage times of every step, shape (m, 3, n) each."""
        dt = self.dt
        q0 = np.vstack([self.state.q, qs[:-1]])[:, None, :]
        qd0 = np.vstack([self.state.nu[6:], qds[:-1]])[:, None, :]
        q1, qd1 = qs[:, None, :], qds[:, None, :]
        h, d, a = (x[:, None, :, None] for x in self._STAGES)
        q = h[0] * q0 + h[1] * dt * qd0 + h[2] * q1 + h[3] * dt * qd1
        qd = (d[0] * q0 + d[2] * q1) / dt + d[1] * qd0 + d[3] * qd1
        qdd = (a[0] * q0 + a[2] * q1) / dt**2 + (a[1] * qd0 + a[3] * qd1) / dt
        return np.ascontiguousarray(q), np.ascontiguousarray(qd), np.ascontiguousarray(qdd)

    def advance(self, t: float, qs: FloatArray, qds: FloatArray) -> FloatingState:
        """As :meth:`floating.BaseTracker.advance`, compiled."""
        qs, qds = np.asarray(qs, dtype=float), np.asarray(qds, dtype=float)
        m, n = qs.shape[0], self.model.n_joints
        if m == 0:
            return self.state
        s_q, s_qd, s_qdd = self._stages(qs, qds)
        out_pos, out_quat = np.empty((m, 3)), np.empty((m, 4))
        out_base, out_tau = np.empty((m, 6)), np.empty((m, n))
        position, quaternion = self.state.position, self.state.quaternion
        base = np.ascontiguousarray(self.state.nu[:6])
        params, ground = self._fast.params, self._fast.ground
        for i in range(m):
            rk4_prescribed_steps(
                params, ground, position, quaternion, base, s_q[i], s_qd[i], s_qdd[i], self.dt,
                out_pos[i : i + 1], out_quat[i : i + 1], out_base[i : i + 1], out_tau[i : i + 1],
            )  # fmt: skip
            position, quaternion, base = out_pos[i], out_quat[i], out_base[i]
        finite = np.isfinite(out_base).all(axis=1) & np.isfinite(out_pos).all(axis=1)
        done = m if finite.all() else int(np.argmin(finite))
        if done > 0:
            k = done - 1
            nu = np.concatenate([out_base[k], qds[k]])
            self.state = FloatingState(out_pos[k].copy(), out_quat[k].copy(), qs[k].copy(), nu)
        if done < m:
            raise SimulationError(
                f"the state left the finite numbers at t = {t + (done + 1) * self.dt:.6g} s: use "
                f"a smaller dt or a softer ground"
            )
        return self.state

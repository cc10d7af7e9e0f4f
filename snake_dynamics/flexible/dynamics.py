"""Kane's equations of the arm, nonlinear and linearised in the elastic coordinates, and the
compiled RK4 loop under a PD controller (docs/flexible.md, "Kane's equations").

M(q) u_dot + h(q, u) + K q + D u = tau (F111): M and h from the compiled kernel
(:func:`snake_dynamics.flexible.kernel.mass_and_bias`), K by (F112), D = damping K.

The linearised model keeps every generalised force to first order in the elastic
coordinates, speeds and accelerations together (the dual parts, eps^2 = 0, (F98)-(F110)):

    M_lin u_dot + h_lin = tau - K q - D u,
    M_lin = [M_0[:, r] + dM[:, r],  M_0[:, e]],   h_lin = h_0 + dh

with M_0, h_0 at the undeformed arm and dM, dh their first-order (dual) parts, computed by
the kernel on dual numbers (a complex step). Products of two elastic quantities, kept by the
nonlinear model, are gone. M_lin's elastic columns keep only M_0, so the kernel sums M's block
of two elastic coordinates in real arithmetic, and the step solves in place: the linearised
model runs faster than real time (bench/README.md, "The flexible arm").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from snake_dynamics.errors import SimulationError, StateError
from snake_dynamics.flexible.kernel import DUAL_STEP, mass_and_bias
from snake_dynamics.flexible.model import FlexibleArm, KernelArrays, KernelTuple
from snake_dynamics.jit import compiled

FloatArray = NDArray[np.float64]


@compiled
def _terms(
    arm: KernelTuple,
    nj: int,
    linearized: bool,
    q: FloatArray,
    u: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    """(M, h) of the nonlinear model, or (M_lin, h_lin) of the linearised one."""
    n = q.shape[0]
    pot = np.zeros(1, q.dtype)
    if not linearized:
        m = np.empty((n, n))
        h = np.empty(n)
        mass_and_bias(arm, q, u, m, h, pot)
        return m, h
    qc = np.empty(n, np.complex128)
    uc = np.empty(n, np.complex128)
    for k in range(n):
        scale = 1.0 if k < nj else 1j * DUAL_STEP
        qc[k] = q[k] * scale
        uc[k] = u[k] * scale
    mc = np.empty((n, n), np.complex128)
    hc = np.empty(n, np.complex128)
    potc = np.zeros(1, np.complex128)
    mass_and_bias(arm, qc, uc, mc, hc, potc, True)
    m = np.empty((n, n))
    h = np.empty(n)
    for a in range(n):
        h[a] = hc[a].real + hc[a].imag / DUAL_STEP
        for b in range(n):
            m[a, b] = mc[a, b].real + (mc[a, b].imag / DUAL_STEP if b < nj else 0.0)
    return m, h


@compiled
def _rate(
    arm: KernelTuple,
    stiffness: FloatArray,
    damping: FloatArray,
    nj: int,
    linearized: bool,
    q: FloatArray,
    u: FloatArray,
    tau: FloatArray,
) -> FloatArray:
    """u_dot of (F111) under the joint torques tau (nj,)."""
    m, h = _terms(arm, nj, linearized, q, u)
    n = q.shape[0]
    for a in range(n):
        acc = -h[a]
        for b in range(n):
            acc -= stiffness[a, b] * q[b] + damping[a, b] * u[b]
        h[a] = acc + (tau[a] if a < nj else 0.0)
    _solve_in_place(m, h)
    return h


@compiled
def _solve_in_place(a: FloatArray, b: FloatArray) -> None:
    """b <- a^-1 b by Gaussian elimination with partial pivoting; ``a`` is overwritten.
    M_lin is not symmetric, so no Cholesky; in place, so nothing is allocated a step."""
    n = b.shape[0]
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(a[i, k]) > abs(a[p, k]):
                p = i
        if p != k:
            for j in range(k, n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
            b[k], b[p] = b[p], b[k]
        for i in range(k + 1, n):
            f = a[i, k] / a[k, k]
            for j in range(k + 1, n):
                a[i, j] -= f * a[k, j]
            b[i] -= f * b[k]
    for i in range(n - 1, -1, -1):
        acc = b[i]
        for j in range(i + 1, n):
            acc -= a[i, j] * b[j]
        b[i] = acc / a[i, i]


@compiled
def _simulate_inputs(
    arm: KernelTuple,
    stiffness: FloatArray,
    damping: FloatArray,
    nj: int,
    linearized: bool,
    kp: FloatArray,
    kd: FloatArray,
    inputs: FloatArray,
    q0: FloatArray,
    u0: FloatArray,
    dt: float,
    n_steps: int,
    every: int,
    q_out: FloatArray,
    u_out: FloatArray,
    tau_out: FloatArray,
) -> None:
    """Classical RK4 under tau = tau_ff + kp (q_ref - q) + kd (u_ref - u), the inputs
    [tau_ff; q_ref; u_ref] (3 nj,) sampled at every stage time j dt/2, (2 n_steps + 1, 3 nj);
    every ``every`` steps stored."""
    q = q0.copy()
    u = u0.copy()
    tau = np.zeros(nj)

    def torque(j: int, qs: FloatArray, us: FloatArray) -> FloatArray:
        for k in range(nj):
            tau[k] = (
                inputs[j, k]
                + kp[k] * (inputs[j, nj + k] - qs[k])
                + kd[k] * (inputs[j, 2 * nj + k] - us[k])
            )
        return tau

    def f(j: int, qs: FloatArray, us: FloatArray) -> FloatArray:
        return _rate(arm, stiffness, damping, nj, linearized, qs, us, torque(j, qs, us))

    row = 0
    for step in range(n_steps + 1):
        j = 2 * step
        if step % every == 0:
            q_out[row] = q
            u_out[row] = u
            tau_out[row] = torque(j, q, u)
            row += 1
        if step == n_steps:
            break
        a1 = f(j, q, u)
        k1q, k1u = u, a1
        q2, u2 = q + 0.5 * dt * k1q, u + 0.5 * dt * k1u
        a2 = f(j + 1, q2, u2)
        q3, u3 = q + 0.5 * dt * u2, u + 0.5 * dt * a2
        a3 = f(j + 1, q3, u3)
        q4, u4 = q + dt * u3, u + dt * a3
        a4 = f(j + 2, q4, u4)
        q = q + dt / 6.0 * (k1q + 2.0 * u2 + 2.0 * u3 + u4)
        u = u + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)


def _step_count(dt: float, t_end: float, every: int) -> int:
    """The RK4 steps of a run of ``t_end`` [s] at ``dt`` [s], stored every ``every`` steps.

    Raises:
        SimulationError: dt or t_end not > 0, or every < 1.
    """
    if not (dt > 0 and t_end > 0 and every >= 1):
        raise SimulationError(f"need dt > 0, t_end > 0 and every >= 1, got {dt}, {t_end}, {every}")
    return round(t_end / dt)


@dataclass(frozen=True)
class PDManoeuvre:
    """A PD controller on the joints whose targets jump at given times.

    Attributes:
        kp: proportional gains [N m/rad], (nj,).
        kd: derivative gains [N m s/rad], (nj,).
        switch_times: when each target set starts [s], (m,), the first 0.
        targets: the joint targets from each switch on [rad], (m, nj).
    """

    kp: FloatArray
    kd: FloatArray
    switch_times: FloatArray
    targets: FloatArray

    def inputs(self, dt: float, t_end: float) -> StageInputs:
        """The manoeuvre's targets at every RK4 stage of a run of ``t_end`` [s] at step
        ``dt`` [s] (no feed-forward, no target rates).

        Raises:
            SimulationError: dt or t_end not > 0.
        """
        n_steps = _step_count(dt, t_end, 1)
        nj = self.kp.shape[0]
        stage_t = np.arange(2 * n_steps + 1) * (0.5 * dt)
        switch = np.asarray(self.switch_times, dtype=float)
        which = np.maximum(np.searchsorted(switch, stage_t + 1e-12, side="right") - 1, 0)
        table = np.zeros((stage_t.size, 3 * nj))
        table[:, nj : 2 * nj] = np.asarray(self.targets)[which]
        return StageInputs(self.kp, self.kd, table, dt)


@dataclass(frozen=True)
class StageInputs:
    """The joint torques of a run, tau = tau_ff + kp (q_ref - q) + kd (u_ref - u): a
    feed-forward and a PD on the joints, sampled at every RK4 stage time j dt/2.

    Attributes:
        kp: proportional gains [N m/rad], (nj,).
        kd: derivative gains [N m s/rad], (nj,).
        table: [tau_ff [N m]; q_ref [rad]; u_ref [rad/s]] at every stage, (2 steps + 1, 3 nj).
        dt: the RK4 step [s].
    """

    kp: FloatArray
    kd: FloatArray
    table: FloatArray
    dt: float


@dataclass(frozen=True)
class FlexibleResult:
    """A run: times t (k,) [s], coordinates q and speeds u (k, n), joint torques tau (k, nj)."""

    t: FloatArray
    q: FloatArray
    u: FloatArray
    tau: FloatArray
    dt: float
    linearized: bool


class FlexibleModel:
    """The arm's equations of motion (F111), nonlinear or linearised.

    Args:
        arm: the arm.
    """

    def __init__(self, arm: FlexibleArm) -> None:
        self.arm = arm
        self.arrays: KernelArrays = arm.kernel_arrays()
        self.n = arm.n
        self.n_joints = arm.n_joints

    def _check(self, name: str, x: FloatArray, size: int) -> FloatArray:
        x = np.ascontiguousarray(x, dtype=float)
        if x.shape != (size,) or not np.all(np.isfinite(x)):
            raise StateError(f"{name} must be {size} finite numbers, got shape {x.shape}")
        return x

    def terms(
        self, q: FloatArray, u: FloatArray, linearized: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        """(M, h) with M u_dot + h + K q + D u = tau (F111); h holds velocity products and
        gravity. ``linearized``: the first-order (M_lin, h_lin) of the module docstring."""
        q = self._check("q", q, self.n)
        u = self._check("u", u, self.n)
        return _terms(self.arrays.as_tuple(), self.n_joints, linearized, q, u)

    def mass_matrix(self, q: FloatArray) -> FloatArray:
        """M(q) of the nonlinear model, (n, n) [SI], symmetric positive definite (F112)."""
        return self.terms(q, np.zeros(self.n))[0]

    def accelerations(
        self, q: FloatArray, u: FloatArray, tau: FloatArray, linearized: bool = False
    ) -> FloatArray:
        """u_dot under joint torques tau [N m], (n,) [rad/s^2 and coordinate units / s^2]."""
        q = self._check("q", q, self.n)
        u = self._check("u", u, self.n)
        tau = self._check("tau", tau, self.n_joints)
        a = self.arrays
        return _rate(a.as_tuple(), a.stiffness, a.damping, self.n_joints, linearized, q, u, tau)

    def energy(self, q: FloatArray, u: FloatArray) -> tuple[float, float]:
        """(kinetic, potential) [J]: 1/2 u^T M u, and gravity plus the strain 1/2 q^T K q."""
        q = self._check("q", q, self.n)
        u = self._check("u", u, self.n)
        m = np.empty((self.n, self.n))
        h = np.empty(self.n)
        pot = np.zeros(1)
        mass_and_bias(self.arrays.as_tuple(), q, u, m, h, pot)
        strain = 0.5 * q @ self.arrays.stiffness @ q
        return float(0.5 * u @ m @ u), float(pot[0] + strain)

    def stable_step(
        self,
        q: FloatArray,
        kp: FloatArray | None = None,
        kd: FloatArray | None = None,
        reach: float = 2.0,
    ) -> float:
        """The RK4 step [s] that keeps every eigenvalue lambda of the arm linearised at rest
        at q (K, D and the PD gains) inside |lambda dt| <= reach (RK4 is stable to 2.78 on
        the negative real axis and 2.83 on the imaginary one)."""
        n, nj = self.n, self.n_joints
        m = self.mass_matrix(q)
        k = self.arrays.stiffness.copy()
        d = self.arrays.damping.copy()
        if kp is not None:
            k[:nj, :nj] += np.diag(kp)
        if kd is not None:
            d[:nj, :nj] += np.diag(kd)
        a = np.zeros((2 * n, 2 * n))
        a[:n, n:] = np.eye(n)
        a[n:, :n] = -np.linalg.solve(m, k)
        a[n:, n:] = -np.linalg.solve(m, d)
        lam = float(np.abs(np.linalg.eigvals(a)).max())
        return reach / max(lam, 1e-12)

    def simulate(
        self, inputs: StageInputs, q0: FloatArray, u0: FloatArray, linearized: bool = False,
        every: int = 1,
    ) -> FlexibleResult:  # fmt: skip
        """Integrate (F111) by RK4 under the joint torques of ``inputs``, compiled.

        Args:
            inputs: the controller and its samples at every stage (:class:`StageInputs`);
                the run lasts their steps of their dt.
            q0: initial coordinates, (n,).
            u0: initial speeds, (n,).
            linearized: the linearised model instead of the nonlinear one.
            every: store every this many steps.

        Raises:
            SimulationError: bad step or inputs, or a run that left the finite numbers.
        """
        nj = self.n_joints
        table = np.ascontiguousarray(inputs.table, dtype=float)
        if table.ndim != 2 or table.shape[1] != 3 * nj or table.shape[0] % 2 != 1:
            raise SimulationError(
                f"inputs must be (2 steps + 1, {3 * nj}) stage samples, got {table.shape}"
            )
        dt = inputs.dt
        n_steps = (table.shape[0] - 1) // 2
        _step_count(dt, n_steps * dt, every)
        q0 = self._check("q0", q0, self.n)
        u0 = self._check("u0", u0, self.n)
        rows = n_steps // every + 1
        q_out = np.empty((rows, self.n))
        u_out = np.empty((rows, self.n))
        tau_out = np.empty((rows, nj))
        a = self.arrays
        _simulate_inputs(
            a.as_tuple(), a.stiffness, a.damping, nj, linearized,
            np.ascontiguousarray(inputs.kp, dtype=float),
            np.ascontiguousarray(inputs.kd, dtype=float),
            table, q0, u0, float(dt), n_steps, int(every), q_out, u_out, tau_out,
        )  # fmt: skip
        if not (np.all(np.isfinite(q_out)) and np.all(np.isfinite(u_out))):
            raise SimulationError(
                f"the run left the finite numbers (dt = {dt} s: try a smaller step)"
            )
        t = np.arange(rows, dtype=float) * (dt * every)
        return FlexibleResult(t, q_out, u_out, tau_out, float(dt), linearized)

    def static_deflection(self, q_joints: FloatArray, iterations: int = 8) -> FloatArray:
        """The coordinates at rest under gravity with the joints held at ``q_joints`` [rad]:
        K_ee q_e = -h_e(q) (F111 with u = 0, u_dot = 0), by fixed-point iteration from
        q_e = 0 (h_e depends on q_e only through the deformed geometry). Returns q, (n,)."""
        nj = self.n_joints
        q = np.zeros(self.n)
        q[:nj] = self._check("q_joints", q_joints, nj)
        k = self.arrays.stiffness[nj:, nj:]
        for _ in range(iterations):
            h = self.terms(q, np.zeros(self.n))[1]
            q[nj:] = np.linalg.solve(k, -h[nj:])
        return q


def warm_up() -> None:
    """Compile this family's kernels now, both models (seconds after an install, then loaded
    from numba's cache), not in the middle of a run."""
    from snake_dynamics.flexible.model import ALUMINIUM, ElasticLink, RigidLink, Section

    hub = RigidLink(1.0, (0.0, 0.0, 0.0), ((1e-3, 0, 0), (0, 1e-3, 0), (0, 0, 1e-3)), (0.1, 0, 0))
    beam = ElasticLink(0.5, ALUMINIUM, Section.tube(0.02, 0.002), 1, 1, 1)
    model = FlexibleModel(FlexibleArm((hub, beam)))
    hold = PDManoeuvre(np.ones(2), np.ones(2), np.zeros(1), np.zeros((1, 2)))
    for linearized in (False, True):
        model.simulate(hold.inputs(1e-4, 2e-4), np.zeros(model.n), np.zeros(model.n), linearized)

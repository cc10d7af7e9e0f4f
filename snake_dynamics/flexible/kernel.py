"""The compiled kernel: mass matrix and bias forces of an arm of rigid and elastic links
(docs/flexible.md, "Kane's equations, nonlinear and linearised").

One forward pass over the links computes every mass element's (a rigid link, a Gauss slice
of an elastic link, a tip body) pose, its partial velocities and partial angular velocities
(the columns of its Jacobian, the paper's projection matrix P_i, (F91), (F92)) and its
velocity-product acceleration, and sums Kane's generalised inertia forces
M u_dot + C u = sum_i P_i^T (m_i a_i, J_i alpha_i + omega_i x J_i omega_i) over the elements
((F110)-(F112); gravity enters as an acceleration of the base).

The elastic rotation of a section is the product Rx(theta_x) Ry(theta_y) Rz(theta_z) of (F23)
before truncation. The same source runs on float64 (the nonlinear model) and on complex128:
with the elastic coordinates and speeds scaled by i h (h = 1e-30) it is dual-number
arithmetic, eps = i h, eps^2 = -h^2 = 0 in float64, so the real part is the rigid (zero-order)
term and the imaginary part / h the exact first-order term of every quantity, the
linearisation of (F98)-(F111) step by step.

Compiled with numba (``cache=True``, like :mod:`snake_dynamics.mfm.spatial`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snake_dynamics.flexible.model import KernelTuple
from snake_dynamics.jit import compiled

#: The dual unit as a complex step: eps = i h (docs/flexible.md).
DUAL_STEP = 1e-30


@compiled
def _cross(a: np.ndarray, b: np.ndarray, r: int) -> Any:
    """Component r of the cross product a x b of two 3-vectors (float64 or complex128)."""
    i, j = (r + 1) % 3, (r + 2) % 3
    return a[i] * b[j] - a[j] * b[i]


@compiled
def mass_and_bias(
    arm: KernelTuple,
    q: np.ndarray,
    u: np.ndarray,
    m_out: np.ndarray,
    h_out: np.ndarray,
    pot_out: np.ndarray,
    elastic_zero_order: bool = False,
) -> None:
    """M(q) and the bias h(q, u) (velocity products and gravity) of M u_dot + h = tau (F111).

    Args:
        arm: the arm (:meth:`snake_dynamics.flexible.model.KernelArrays.as_tuple`); its
            armature: each joint's reflected rotor inertia [kg m^2], added to M's diagonal.
        q, u: coordinates and speeds, (n,), float64 or complex128.
        m_out: (n, n), filled with M [SI].
        h_out: (n,), filled with h [N m or N].
        pot_out: (1,), filled with the gravity potential sum -m g . r [J].
        elastic_zero_order: M's block of two elastic coordinates from the real (zero-order)
            parts only, in real arithmetic: all the linearised model keeps of it
            (:mod:`snake_dynamics.flexible.dynamics`).
    """
    (
        rfix, dist, dist_phid, dist_phit, e0, ne, s_link, s_pos, s_mass, s_inertia,
        s_phid, s_phit, gravity, armature,
    ) = arm  # fmt: skip
    n = q.shape[0]
    nl = rfix.shape[0]
    ns = s_link.shape[0]
    dt = q.dtype
    for a in range(n):
        h_out[a] = 0.0
        for b in range(n):
            m_out[a, b] = 0.0
    pot_out[0] = 0.0
    vec = np.zeros((17, 3), dt)  # the 3-vectors below, (3, 3) and (3, n) blocks
    mats = np.zeros((5, 3, 3), dt)
    cols = np.zeros((5, 3, n), dt)
    rot = mats[0]
    tmp = mats[1]
    for k in range(3):
        rot[k, k] = 1.0
    pos = vec[0]
    w = vec[1]
    alpha = vec[2]
    acc = vec[3]
    for k in range(3):
        acc[k] = -gravity[k]
    jw = cols[0]
    jv = cols[1]
    # the element's (or distal frame's) quantities
    cjw = cols[2]
    cjv = cols[3]
    cw = vec[4]
    calpha = vec[5]
    cacc = vec[6]
    crot = mats[2]
    cr = vec[7]
    iw = mats[3]
    ic = mats[4]
    iww = vec[8]
    mom = vec[9]
    wr = vec[10]
    wxr = vec[11]
    rtd = vec[12]
    jwi = cols[4]
    t = vec[13]
    td = vec[14]
    th = vec[15]
    thd = vec[16]
    active = np.zeros(n, np.int64)
    na = 0
    s = 0
    for i in range(nl):
        # ---- joint i: turn about z after the fixed rotation (F57), (F114)
        c, sn = np.cos(q[i]), np.sin(q[i])
        for r in range(3):
            for k in range(3):
                tmp[r, k] = (
                    rot[r, 0] * rfix[i, 0, k]
                    + rot[r, 1] * rfix[i, 1, k]
                    + rot[r, 2] * rfix[i, 2, k]
                )
        for r in range(3):
            x0, x1 = tmp[r, 0], tmp[r, 1]
            rot[r, 0] = c * x0 + sn * x1
            rot[r, 1] = -sn * x0 + c * x1
            rot[r, 2] = tmp[r, 2]
            jw[r, i] = tmp[r, 2]
            wr[r] = tmp[r, 2] * u[i]
        for r in range(3):
            alpha[r] += _cross(w, wr, r)
        for r in range(3):
            w[r] += wr[r]
        active[na] = i
        na += 1
        m = ne[i]
        for k in range(m):
            active[na + k] = e0[i] + k
        # ---- the link's mass elements, then its distal frame (the last pass, is_end)
        s_end = s
        while s_end < ns and s_link[s_end] == i:
            s_end += 1
        for el in range(s, s_end + 1):
            is_end = el == s_end
            # local translation t, its rate td, elastic rotation theta and its rate thd
            for k in range(3):
                t[k] = dist[i, k] if is_end else s_pos[el, k]
                td[k] = 0.0
                th[k] = 0.0
                thd[k] = 0.0
            for j in range(m):
                qj, uj = q[e0[i] + j], u[e0[i] + j]
                for k in range(3):
                    pd = dist_phid[i, j, k] if is_end else s_phid[el, j, k]
                    pt = dist_phit[i, j, k] if is_end else s_phit[el, j, k]
                    t[k] += pd * qj
                    td[k] += pd * uj
                    th[k] += pt * qj
                    thd[k] += pt * uj
            c0, s0 = np.cos(th[0]), np.sin(th[0])
            c1, s1 = np.cos(th[1]), np.sin(th[1])
            c2, s2 = np.cos(th[2]), np.sin(th[2])
            # Rrel = Rx Ry Rz (F23, untruncated); G = [e1, Rx e2, Rx Ry e3]
            g1 = (0.0 * c0, c0, s0)
            g2 = (s1, -s0 * c1, c0 * c1)
            rrel = (
                (c1 * c2, -c1 * s2, s1),
                (c0 * s2 + s0 * s1 * c2, c0 * c2 - s0 * s1 * s2, -s0 * c1),
                (s0 * s2 - c0 * s1 * c2, s0 * c2 + c0 * s1 * s2, c0 * c1),
            )
            wl0 = thd[0] + g1[0] * thd[1] + g2[0] * thd[2]
            wl1 = g1[1] * thd[1] + g2[1] * thd[2]
            wl2 = g1[2] * thd[1] + g2[2] * thd[2]
            # G_dot theta_dot = thd1 (thd0 e1 x g1) + thd2 ((thd0 e1 + thd1 g1) x g2)
            a0, a1, a2 = thd[0], thd[1] * g1[1], thd[1] * g1[2]
            gd0 = thd[2] * (a1 * g2[2] - a2 * g2[1])
            gd1 = thd[1] * (-thd[0] * g1[2]) + thd[2] * (a2 * g2[0] - a0 * g2[2])
            gd2 = thd[1] * (thd[0] * g1[1]) + thd[2] * (a0 * g2[1] - a1 * g2[0])
            for r in range(3):
                cr[r] = rot[r, 0] * t[0] + rot[r, 1] * t[1] + rot[r, 2] * t[2]
                rtd[r] = rot[r, 0] * td[0] + rot[r, 1] * td[1] + rot[r, 2] * td[2]
                wr[r] = rot[r, 0] * wl0 + rot[r, 1] * wl1 + rot[r, 2] * wl2
                for k in range(3):
                    crot[r, k] = (
                        rot[r, 0] * rrel[0][k] + rot[r, 1] * rrel[1][k] + rot[r, 2] * rrel[2][k]
                    )
            # velocity-product accelerations (u_dot = 0), inertial frame
            for r in range(3):
                wxr[r] = _cross(w, cr, r)
            for r in range(3):
                cacc[r] = (
                    acc[r] + _cross(alpha, cr, r) + _cross(w, wxr, r) + 2.0 * _cross(w, rtd, r)
                )
                calpha[r] = (
                    alpha[r]
                    + _cross(w, wr, r)
                    + rot[r, 0] * gd0
                    + rot[r, 1] * gd1
                    + rot[r, 2] * gd2
                )
                cw[r] = w[r] + wr[r]
            # partial velocities and partial angular velocities (the projection matrix, F92)
            for ia in range(na):
                col = active[ia]
                cjw[0, col], cjw[1, col], cjw[2, col] = jw[0, col], jw[1, col], jw[2, col]
                cjv[0, col] = jv[0, col] + jw[1, col] * cr[2] - jw[2, col] * cr[1]
                cjv[1, col] = jv[1, col] + jw[2, col] * cr[0] - jw[0, col] * cr[2]
                cjv[2, col] = jv[2, col] + jw[0, col] * cr[1] - jw[1, col] * cr[0]
            for j in range(m):
                col = e0[i] + j
                p0 = dist_phit[i, j, 0] if is_end else s_phit[el, j, 0]
                p1 = dist_phit[i, j, 1] if is_end else s_phit[el, j, 1]
                p2 = dist_phit[i, j, 2] if is_end else s_phit[el, j, 2]
                l0 = p0 + g1[0] * p1 + g2[0] * p2
                l1 = g1[1] * p1 + g2[1] * p2
                l2 = g1[2] * p1 + g2[2] * p2
                d0 = dist_phid[i, j, 0] if is_end else s_phid[el, j, 0]
                d1 = dist_phid[i, j, 1] if is_end else s_phid[el, j, 1]
                d2 = dist_phid[i, j, 2] if is_end else s_phid[el, j, 2]
                for r in range(3):
                    cjw[r, col] = rot[r, 0] * l0 + rot[r, 1] * l1 + rot[r, 2] * l2
                    cjv[r, col] = rot[r, 0] * d0 + rot[r, 1] * d1 + rot[r, 2] * d2
            if is_end:
                # the distal frame becomes the parent of the next joint
                for r in range(3):
                    pos[r] += cr[r]
                    w[r] = cw[r]
                    alpha[r] = calpha[r]
                    acc[r] = cacc[r]
                    for k in range(3):
                        rot[r, k] = crot[r, k]
                for ia in range(na + m):
                    col = active[ia]
                    for r in range(3):
                        jw[r, col] = cjw[r, col]
                        jv[r, col] = cjv[r, col]
                na += m
                continue
            # Kane's generalised inertia forces of the element (F110)
            mass = s_mass[el]
            # iw = crot J crot^T, through ic = J crot^T
            for ll in range(3):
                for k in range(3):
                    ic[ll, k] = (
                        s_inertia[el, ll, 0] * crot[k, 0]
                        + s_inertia[el, ll, 1] * crot[k, 1]
                        + s_inertia[el, ll, 2] * crot[k, 2]
                    )
            for r in range(3):
                for k in range(3):
                    iw[r, k] = crot[r, 0] * ic[0, k] + crot[r, 1] * ic[1, k] + crot[r, 2] * ic[2, k]
            for r in range(3):
                iww[r] = iw[r, 0] * cw[0] + iw[r, 1] * cw[1] + iw[r, 2] * cw[2]
            for r in range(3):
                mom[r] = (
                    iw[r, 0] * calpha[0]
                    + iw[r, 1] * calpha[1]
                    + iw[r, 2] * calpha[2]
                    + _cross(cw, iww, r)
                )
            f0, f1, f2 = mass * cacc[0], mass * cacc[1], mass * cacc[2]
            pot_out[0] -= mass * (
                gravity[0] * (pos[0] + cr[0])
                + gravity[1] * (pos[1] + cr[1])
                + gravity[2] * (pos[2] + cr[2])
            )
            tot = na + m
            for ia in range(tot):
                col = active[ia]
                for r in range(3):
                    jwi[r, col] = (
                        iw[r, 0] * cjw[0, col] + iw[r, 1] * cjw[1, col] + iw[r, 2] * cjw[2, col]
                    )
            for ia in range(tot):
                ca = active[ia]
                h_out[ca] += (
                    cjv[0, ca] * f0
                    + cjv[1, ca] * f1
                    + cjv[2, ca] * f2
                    + cjw[0, ca] * mom[0]
                    + cjw[1, ca] * mom[1]
                    + cjw[2, ca] * mom[2]
                )
                for ib in range(ia + 1):
                    cb = active[ib]
                    if elastic_zero_order and ca >= nl and cb >= nl:
                        m_out[ca, cb] += mass * (
                            cjv[0, ca].real * cjv[0, cb].real
                            + cjv[1, ca].real * cjv[1, cb].real
                            + cjv[2, ca].real * cjv[2, cb].real
                        ) + (
                            cjw[0, ca].real * jwi[0, cb].real
                            + cjw[1, ca].real * jwi[1, cb].real
                            + cjw[2, ca].real * jwi[2, cb].real
                        )
                        continue
                    v = mass * (
                        cjv[0, ca] * cjv[0, cb] + cjv[1, ca] * cjv[1, cb] + cjv[2, ca] * cjv[2, cb]
                    )
                    v += cjw[0, ca] * jwi[0, cb] + cjw[1, ca] * jwi[1, cb] + cjw[2, ca] * jwi[2, cb]
                    m_out[ca, cb] += v
        s = s_end
    # each pair (a, b) was summed into one of its two slots: the later one in ``active``
    for a in range(n):
        for b in range(a):
            total = m_out[a, b] + m_out[b, a]
            m_out[a, b] = total
            m_out[b, a] = total
    for a in range(armature.shape[0]):
        m_out[a, a] += armature[a]

"""The ground's contact and friction wrenches compiled (docs/mfm.md, "The snake on the
ground", eqs. 231-236): the :class:`Ground` packed into an array for the kernels, the
friction law's tanh, and the wrenches on every body, the twin of
:func:`snake_dynamics.ground.wrenches.ground_wrenches`. The floating-base kernels
(:mod:`snake_dynamics.floating`) call :func:`ground_wrench_kernel` inside their RK4 stages.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.ground.model import VERTICAL_TOL, Ground
from snake_dynamics.jit import inlined

FloatArray = NDArray[np.float64]


def ground_parameters(ground: Ground | None) -> FloatArray:
    """A :class:`Ground` packed for the kernels: [stiffness N/m, damping N s/m, mu_along,
    mu_across, mu_backward, velocity_scale m/s, viscous_along N s/m, viscous_across N s/m,
    contacts, on (1.0 with a ground, 0.0 without), width m], shape (11,)."""
    if ground is None:
        return np.array([1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    return np.array(
        [
            ground.stiffness,
            ground.damping,
            ground.mu_along,
            ground.mu_across,
            ground.backward,
            ground.velocity_scale,
            ground.viscous_along,
            ground.viscous_across,
            float(ground.contacts),
            1.0,
            ground.width,
        ]
    )


#: Cephes' tanh (S. L. Moshier, ``tanh.c``): x + x^3 P(x^2) / Q(x^2) for |x| < 0.625.
_TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


@inlined
def fast_tanh(x: float) -> float:
    """tanh(x) within 2 ulp of the C library's, about a third of its time inline: Cephes'
    rational form below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) up to 20, +-1 beyond (where the
    double nearest tanh is 1). The friction law's (eq. 234) 2 tanh per contact point."""
    z = abs(x)
    if z >= 0.625:
        r = 1.0 if z >= 20.0 else 1.0 - 2.0 / (math.exp(z + z) + 1.0)
        return r if x >= 0.0 else -r
    p0, p1, p2 = _TANH_P
    q0, q1, q2 = _TANH_Q
    s = x * x
    return x + x * s * ((p0 * s + p1) * s + p2) / (((s + q0) * s + q1) * s + q2)


@inlined
def ground_wrench_kernel(
    ground: FloatArray,
    lengths: FloatArray,
    radii: FloatArray,
    rotations: FloatArray,
    centres: FloatArray,
    velocities: FloatArray,
    omegas: FloatArray,
    out: FloatArray,
) -> None:
    """Contact and friction wrenches on every body (eqs. 231-236), as
    :func:`snake_dynamics.ground.wrenches.ground_wrenches`; ``ground`` packed by
    :func:`ground_parameters`.

    Writes out (B, 6): [force (inertial) N; moment about the CM (body frame) N m].
    """
    stiffness, damping, mu_along, mu_across = ground[0], ground[1], ground[2], ground[3]
    mu_back, scale, visc_along, visc_across = ground[4], ground[5], ground[6], ground[7]
    count = int(ground[8])
    inv_scale = 1.0 / scale
    half_width = 0.5 * ground[10]
    corners = 4 if half_width > 0.0 else 1
    if corners == 4:  # a box's two corners on the ground share k and d (eq. 232)
        stiffness, damping = 0.5 * stiffness, 0.5 * damping
    viscous = visc_along > 0.0 or visc_across > 0.0
    for b in range(lengths.shape[0]):
        rb = rotations[b]
        ux, uy, uz = rb[0, 1], rb[1, 1], rb[2, 1]  # u = R_b e2
        dx, dy, dz = -uz * ux, -uz * uy, 1.0 - uz * uz  # d = e3 - (e3 . u) u (eq. 231)
        norm = math.sqrt(dx * dx + dy * dy + dz * dz)
        if norm > VERTICAL_TOL:
            dx, dy, dz = dx / norm, dy / norm, dz / norm
        else:
            dx = dy = dz = 0.0
        tx, ty = ux, uy  # t: u's horizontal projection, n = e3 x t (eq. 233)
        norm = math.sqrt(tx * tx + ty * ty)
        if norm > VERTICAL_TOL:
            tx, ty = tx / norm, ty / norm
        else:
            tx = ty = 0.0
        nx, ny = -ty, tx
        cz = centres[b, 2]
        vx, vy, vz = velocities[b, 0], velocities[b, 1], velocities[b, 2]
        ox, oy, oz = omegas[b, 0], omegas[b, 1], omegas[b, 2]
        fx = fy = fz = mx = my = mz = 0.0
        touching = False
        section, along = 0, 0.0
        for p in range(count * corners):
            if corners == 1 or p % 4 == 0:  # a new section: s along the body's axis
                section = p if corners == 1 else p // 4
                s = -0.5 + section / (count - 1) if count > 1 else 0.0
                along = s * lengths[b]
            if corners == 4:  # the box's corner R_b (±w/2, s, ±rho_b)
                corner = p - section * 4
                side = half_width if corner % 2 else -half_width
                up = radii[b] if corner >= 2 else -radii[b]
                ax = along * ux + (side * rb[0, 0] + up * rb[0, 2])
                ay = along * uy + (side * rb[1, 0] + up * rb[1, 2])
                az = along * uz + (side * rb[2, 0] + up * rb[2, 2])
            else:  # the round body's lowest point
                ax = along * ux - radii[b] * dx
                ay = along * uy - radii[b] * dy
                az = along * uz - radii[b] * dz
            depth = -(cz + az)
            if not depth > 0.0:
                continue
            touching = True
            px = vx + oy * az - oz * ay  # the point's velocity
            py = vy + oz * ax - ox * az
            pz = vz + ox * ay - oy * ax
            normal = max(stiffness * depth - damping * pz, 0.0)  # eq. 232
            v_along = px * tx + py * ty
            v_across = px * nx + py * ny
            mu = mu_along if v_along > 0.0 else mu_back
            f_along = -normal * mu * fast_tanh(v_along * inv_scale)  # eq. 234
            f_across = -normal * mu_across * fast_tanh(v_across * inv_scale)
            gx = f_along * tx + f_across * nx
            gy = f_along * ty + f_across * ny
            gz = normal
            fx += gx
            fy += gy
            fz += gz
            mx += ay * gz - az * gy
            my += az * gx - ax * gz
            mz += ax * gy - ay * gx
        if viscous and touching:  # eq. 235
            va = visc_along * (vx * tx + vy * ty)
            vn = visc_across * (vx * nx + vy * ny)
            fx -= va * tx + vn * nx
            fy -= va * ty + vn * ny
        ob = out[b]
        ob[0], ob[1], ob[2] = fx, fy, fz
        for i in range(3):  # R_bᵀ (eq. 236)
            ob[3 + i] = rb[0, i] * mx + rb[1, i] * my + rb[2, i] * mz


def fast_ground_wrenches(
    ground: Ground,
    lengths: FloatArray,
    radii: FloatArray,
    rotations: FloatArray,
    centres: FloatArray,
    velocities: FloatArray,
    omegas: FloatArray,
) -> FloatArray:
    """Contact and friction wrenches on every body (eqs. 231-236), compiled; equals
    :func:`snake_dynamics.ground.wrenches.ground_wrenches` (same arguments).

    Args:
        ground: the ground's parameters.
        lengths: L_b [m], shape (B,).
        radii: rho_b [m], shape (B,).
        rotations: R_b, shape (B, 3, 3).
        centres: CM positions r_b [m], shape (B, 3).
        velocities: CM velocities (inertial) [m/s], shape (B, 3).
        omegas: angular velocities (inertial) [rad/s], shape (B, 3).

    Returns:
        Per body [force (inertial) N; moment about the CM (body frame) N m], shape (B, 6).
    """
    out = np.empty((len(lengths), 6))

    def packed(values: ArrayLike) -> FloatArray:
        return np.ascontiguousarray(values, dtype=np.float64)

    ground_wrench_kernel(
        ground_parameters(ground),
        packed(lengths),
        packed(radii),
        packed(rotations),
        packed(centres),
        packed(velocities),
        packed(omegas),
        out,
    )
    return out

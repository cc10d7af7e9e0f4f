"""The 3-link kinematic snake with a passive wheel on every link (docs/mfm.md, "The
kinematic snake (SE(2))", eqs. 307-313).

After Prada, Miková, Virgala, Kelemen, Sinčák and Mykhailyshyn, *Mathematical Modeling of
Robotic Locomotion Systems*, Symmetry 16(3), 376 (2024), with its lost minus signs restored
(see the docs). Written afresh from the no-sideslip constraints.

Frames: three equal links of length L [m]. The body frame g = (x, y, θ) sits at the
centre of the middle link (link 2), its x-axis along the link towards link 1. Joint 1 is
at (+L/2, 0) in that frame and turns link 1 by +α1; joint 2 is at (-L/2, 0) and turns
link 3 by -α2, so link 1's heading is θ + α1 and link 3's is θ - α2. Each
link's frame sits at its centre with its x-axis along the link, pointing from the tail
(link 3's free end) towards the head (link 1's free end), as link 2's does.
The wheels' axles are the links' y-axes: no link centre may move along its own y-axis.
The shape is r = (α1, α2) [rad], with |α1|, |α2| < π; the body velocity ξ = (ξ_x, ξ_y,
ξ_θ) is the middle link's (:mod:`snake_dynamics.planar.se2` conventions), and the local
connection A(r) gives ξ = -A(r) ṙ.

Singular shapes: the connection is undefined where the three wheel constraints on ξ are
dependent. That happens (a) on the line α1 = α2 (the straight snake included), where the
three axles meet in one point (or are parallel): there the snake may pivot about that
point with no shape change, and only shape velocities with α̇1 = -α̇2 are admissible; and
(b) where a link folds onto the middle one, |α_i| = π. Both raise
:class:`~snake_dynamics.errors.SingularConfigurationError`. The lateral-undulation gait
crosses line (a) twice a cycle, and exactly when α̇1 + α̇2 = 0: there ξ(t) is a removable
0/0, which :meth:`LateralUndulation.body_velocity` evaluates by the series of x / sin x.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import GaitError, ModelError, SingularConfigurationError, StateError
from snake_dynamics.planar import se2

FloatArray = NDArray[np.float64]

#: |sin((α1 - α2)/2)| below this counts as the singular line α1 = α2.
DIAGONAL_TOL = 1e-12
#: cos(α1/2) cos(α2/2) below this counts as a folded link (|α_i| = π).
FOLD_TOL = 1e-9
#: |x| below which x / sin x is evaluated by its series (error < 1e-25).
SERIES_TOL = 1e-4


def _length(length: float) -> float:
    if not (math.isfinite(length) and length > 0.0):
        raise ModelError(f"link length must be a finite number > 0 m, got {length!r}")
    return float(length)


def _shape(r: ArrayLike, name: str = "r") -> FloatArray:
    out = np.asarray(r, dtype=float)
    if out.shape != (2,) or not np.all(np.isfinite(out)):
        raise StateError(f"{name} must be a finite pair (alpha1, alpha2) [rad], got {r!r}")
    return out


def _sum_difference(r: FloatArray) -> tuple[float, float]:
    """(σ, ψ) = ((α1 + α2)/2, (α1 - α2)/2) (eq. 311), after the fold check."""
    if min(abs(math.cos(0.5 * r[0])), abs(math.cos(0.5 * r[1]))) < FOLD_TOL:
        raise SingularConfigurationError(
            f"shape r = {r.tolist()} folds a link onto the middle link (|alpha_i| = pi): the "
            "connection is undefined there; keep |alpha1|, |alpha2| < pi"
        )
    return 0.5 * (r[0] + r[1]), 0.5 * (r[0] - r[1])


def link_poses(g: ArrayLike, r: ArrayLike, length: float = 1.0) -> FloatArray:
    """Poses of the three link centres in the world (eq. 307).

    Args:
        g: pose of the middle link's centre, SE(2) matrix, shape (3, 3).
        r: shape (α1, α2) [rad], shape (2,).
        length: link length L [m].

    Returns:
        (g_1, g_2, g_3), shape (3, 3, 3); g_2 = g.
    """
    half = 0.5 * _length(length)
    a = _shape(r)
    g2 = np.asarray(g, dtype=float)
    front, back = se2.pose(half, 0.0, 0.0), se2.pose(-half, 0.0, 0.0)
    g1 = g2 @ front @ se2.pose(0.0, 0.0, a[0]) @ front
    g3 = g2 @ back @ se2.pose(0.0, 0.0, -a[1]) @ back
    return np.stack([g1, g2, g3])


def constraint_matrix(r: ArrayLike, length: float = 1.0) -> FloatArray:
    """The no-sideslip (Pfaffian) constraints ω(r) [ξ; ṙ] = 0, one row a link (eq. 308).

    Args:
        r: shape (α1, α2) [rad], shape (2,).
        length: link length L [m].

    Returns:
        ω(r), shape (3, 5), columns (ξ_x, ξ_y, ξ_θ, α̇1, α̇2); row i times [ξ; ṙ] is the
        lateral velocity of link i's centre [m/s].
    """
    half = 0.5 * _length(length)
    a1, a2 = _shape(r)
    s1, c1, s2, c2 = math.sin(a1), math.cos(a1), math.sin(a2), math.cos(a2)
    return np.array(
        [
            [-s1, c1, half * (1.0 + c1), half, 0.0],
            [0.0, 1.0, 0.0, 0.0, 0.0],
            [s2, c2, -half * (1.0 + c2), 0.0, half],
        ]
    )


def _diagonal_error(r: FloatArray) -> SingularConfigurationError:
    return SingularConfigurationError(
        f"shape r = {r.tolist()} lies on the singular line alpha1 = alpha2: the three wheel "
        "axles meet in one point, so xi is not a function of (r, r_dot) there (the snake "
        "may pivot about that point, and only r_dot with alpha1_dot = -alpha2_dot is "
        "admissible). Step off the line, or evaluate along a path "
        "(LateralUndulation.body_velocity takes the limit)"
    )


def local_connection(r: ArrayLike, length: float = 1.0) -> FloatArray:
    """The local connection A(r), with ξ = -A(r) ṙ (eqs. 309, 310).

    A(r) = -(1/D) [[(L/2)(1 + cos α2), (L/2)(1 + cos α1)], [0, 0], [sin α2, sin α1]],
    D = 4 sin((α1 - α2)/2) cos(α1/2) cos(α2/2), D in the factored form so that it has no
    cancellation near α1 = α2.

    Args:
        r: shape (α1, α2) [rad], shape (2,), |α_i| < π.
        length: link length L [m].

    Returns:
        A(r), shape (3, 2); rows (ξ_x [m/rad], ξ_y [m/rad], ξ_θ [rad/rad]).

    Raises:
        SingularConfigurationError: r on α1 = α2 (every entry but row 2 diverges) or a
            folded link.
    """
    half = 0.5 * _length(length)
    a = _shape(r)
    _, psi = _sum_difference(a)
    if abs(math.sin(psi)) < DIAGONAL_TOL:
        raise _diagonal_error(a)
    d = 4.0 * math.sin(psi) * math.cos(0.5 * a[0]) * math.cos(0.5 * a[1])
    s1, c1, s2, c2 = math.sin(a[0]), math.cos(a[0]), math.sin(a[1]), math.cos(a[1])
    return -np.array([[half * (1.0 + c2), half * (1.0 + c1)], [0.0, 0.0], [s2, s1]]) / d


def _xi_cancelled(
    sigma: float, psi: float, ratio: float, psi_dot: float, length: float
) -> FloatArray:
    """ξ from the cancelled form (eq. 311), with ratio = σ̇ / sin ψ given."""
    den = math.cos(sigma) + math.cos(psi)  # = 2 cos(α1/2) cos(α2/2) > 0
    xi_x = (
        0.5
        * length
        * ((1.0 + math.cos(sigma) * math.cos(psi)) * ratio + math.sin(sigma) * psi_dot)
        / den
    )
    xi_t = (math.sin(sigma) * math.cos(psi) * ratio - math.cos(sigma) * psi_dot) / den
    return np.array([xi_x, 0.0, xi_t])


def body_velocity(r: ArrayLike, r_dot: ArrayLike, length: float = 1.0) -> FloatArray:
    """The middle link's body velocity ξ = -A(r) ṙ, by the cancelled form (eq. 311).

    With σ = (α1 + α2)/2, ψ = (α1 - α2)/2, the antisymmetric rate ψ̇ enters with bounded
    coefficients everywhere and only the symmetric rate σ̇ is divided by sin ψ; so near
    α1 = α2 the result is as accurate as its inputs.

    Args:
        r: shape (α1, α2) [rad], shape (2,).
        r_dot: shape velocity (α̇1, α̇2) [rad/s], shape (2,).
        length: link length L [m].

    Returns:
        ξ = (ξ_x [m/s], 0, ξ_θ [rad/s]), shape (3,).

    Raises:
        SingularConfigurationError: r on α1 = α2 with ṙ ≠ 0, or a folded link.
    """
    a, a_dot = _shape(r), _shape(r_dot, "r_dot")
    sigma, psi = _sum_difference(a)
    if not np.any(a_dot):
        return np.zeros(3)
    if abs(math.sin(psi)) < DIAGONAL_TOL:
        raise _diagonal_error(a)
    sigma_dot, psi_dot = 0.5 * (a_dot[0] + a_dot[1]), 0.5 * (a_dot[0] - a_dot[1])
    return _xi_cancelled(sigma, psi, sigma_dot / math.sin(psi), psi_dot, _length(length))


def x_over_sin(x: float) -> float:
    """x / sin x for |x| < π, its removable value 1 at x = 0 by the series (eq. 313)."""
    if abs(x) < SERIES_TOL:
        x2 = x * x
        return 1.0 + x2 / 6.0 + 7.0 * x2 * x2 / 360.0
    return x / math.sin(x)


@dataclasses.dataclass(frozen=True)
class LateralUndulation:
    """The lateral-undulation shape gait (eq. 312).

    α1(t) = a sin(d ω t), α2(t) = a sin(d ω t + φ): a closed loop in shape space, period
    2π/ω, traversed forwards (d = +1) or backwards (d = -1). The paper's gait is a = 40°,
    φ = 25°, ω = 1 rad/s (period 2π s).

    Attributes:
        amplitude: a [rad], 0 <= a < π.
        phase: φ [rad], α2's lead over α1; not a multiple of 2π unless a = 0.
        frequency: ω [rad/s], > 0.
        direction: d, +1 or -1.
    """

    amplitude: float = math.radians(40.0)
    phase: float = math.radians(25.0)
    frequency: float = 1.0
    direction: int = 1

    def __post_init__(self) -> None:
        if not (math.isfinite(self.amplitude) and 0.0 <= self.amplitude < math.pi):
            raise GaitError(f"amplitude must be in [0, pi) rad, got {self.amplitude!r}")
        if not (math.isfinite(self.frequency) and self.frequency > 0.0):
            raise GaitError(f"frequency must be > 0 rad/s, got {self.frequency!r}")
        if self.direction not in (1, -1):
            raise GaitError(f"direction must be +1 or -1, got {self.direction!r}")
        if not math.isfinite(self.phase) or (
            self.amplitude > 0.0 and abs(math.sin(0.5 * self.phase)) < DIAGONAL_TOL
        ):
            raise GaitError(
                f"phase {self.phase!r} rad keeps alpha1 = alpha2, the singular line, where "
                "the gait's alpha1_dot + alpha2_dot != 0 violates the wheel constraints; use "
                "a phase that is not a multiple of 2 pi"
            )

    @property
    def period(self) -> float:
        """2π/ω [s]."""
        return 2.0 * math.pi / self.frequency

    def _tau(self, t: float) -> float:
        return self.direction * self.frequency * t + 0.5 * self.phase

    def shape(self, t: float) -> FloatArray:
        """r(t) = (α1, α2) [rad], shape (2,)."""
        w = self.direction * self.frequency * t
        return self.amplitude * np.array([math.sin(w), math.sin(w + self.phase)])

    def shape_velocity(self, t: float) -> FloatArray:
        """ṙ(t) = (α̇1, α̇2) [rad/s], shape (2,)."""
        w = self.direction * self.frequency * t
        k = self.direction * self.frequency * self.amplitude
        return k * np.array([math.cos(w), math.cos(w + self.phase)])

    def body_velocity(self, t: float, length: float = 1.0) -> FloatArray:
        """ξ(t) along the gait, continuous through the crossings of α1 = α2 (eq. 313).

        σ = a cos(φ/2) sin τ and ψ = -a sin(φ/2) cos τ with τ = d ω t + φ/2, so
        σ̇ / sin ψ = -d ω cot(φ/2) · x / sin x with x = a sin(φ/2) cos τ: the 0/0 at the
        crossings (cos τ = 0) is removed by :func:`x_over_sin`.

        Args:
            t: time [s].
            length: link length L [m].

        Returns:
            ξ = (ξ_x [m/s], 0, ξ_θ [rad/s]), shape (3,).
        """
        length = _length(length)
        if self.amplitude == 0.0:
            return np.zeros(3)
        tau = self._tau(t)
        a, half_phase = self.amplitude, 0.5 * self.phase
        sigma = a * math.cos(half_phase) * math.sin(tau)
        psi = -a * math.sin(half_phase) * math.cos(tau)
        psi_dot = self.direction * self.frequency * a * math.sin(half_phase) * math.sin(tau)
        x = a * math.sin(half_phase) * math.cos(tau)
        ratio = (
            -self.direction * self.frequency * math.cos(half_phase) / math.sin(half_phase)
        ) * x_over_sin(x)
        _sum_difference(self.shape(t))  # fold check
        return _xi_cancelled(sigma, psi, ratio, psi_dot, length)


def reconstruct(
    gait: LateralUndulation,
    t_end: float,
    length: float = 1.0,
    steps: int = 400,
    g0: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """g(t) of the middle link over [0, t_end], from ġ = g hat(ξ(t)) (eqs. 304, 306).

    Args:
        gait: the shape gait.
        t_end: end time [s].
        length: link length L [m].
        steps: Magnus-4 steps (global error O(steps⁻⁴)).
        g0: pose at t = 0, shape (3, 3); identity by default.

    Returns:
        (t, g): times [s], shape (steps + 1,), and poses, shape (steps + 1, 3, 3).
    """
    start = np.eye(3) if g0 is None else np.asarray(g0, dtype=float)
    return se2.integrate_magnus4(start, lambda t: gait.body_velocity(t, length), 0.0, t_end, steps)


def cycle_displacement(
    gait: LateralUndulation, length: float = 1.0, steps: int = 400
) -> FloatArray:
    """Net displacement over one gait cycle from t = 0, as g(0)⁻¹ g(T) = (Δx, Δy, Δθ).

    Expressed in the middle link's frame at t = 0 (x along that link) [m, m, rad].
    """
    _, g = reconstruct(gait, gait.period, length, steps)
    return se2.coordinates(g[-1])


def plot_connection(
    path: str | Path,
    length: float = 1.0,
    gait: LateralUndulation | None = None,
    extent: float = 1.2,
    points: int = 21,
) -> Path:
    """Draw the vector fields of the three rows of -A(r) over shape space into a PNG.

    Each panel shows one row of -A, so ξ_i = (-A_i) · ṙ: a shape velocity along the arrows
    drives ξ_i positive, against them negative. Arrows are normalised to unit length and
    coloured by log10 of their magnitude (the field diverges at α1 = α2, dashed); the
    ξ_y field is identically zero (the middle wheel). The gait's loop is drawn on top.

    Args:
        path: PNG file to write.
        length: link length L [m].
        gait: a gait whose loop to overlay; the paper's by default.
        extent: the plot covers |α1|, |α2| <= extent [rad], < π.
        points: grid points per axis.

    Returns:
        The path written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not 0.0 < extent < math.pi:
        raise ValueError(f"extent must be in (0, pi) rad, got {extent!r}")
    gait = LateralUndulation() if gait is None else gait
    grid = np.linspace(-extent, extent, points)
    a1, a2 = np.meshgrid(grid, grid, indexing="xy")
    field = np.full((3, 2, points, points), np.nan)
    for i in range(points):
        for j in range(points):
            r = (a1[i, j], a2[i, j])
            if abs(math.sin(0.5 * (r[0] - r[1]))) > 1e-6:
                field[:, :, i, j] = -local_connection(r, length)
    ts = np.linspace(0.0, gait.period, 200)
    loop = np.array([gait.shape(t) for t in ts])

    fig = Figure(figsize=(15, 5), layout="constrained")
    FigureCanvasAgg(fig)
    titles = ("-A row ξ_x [m/rad]", "-A row ξ_y (identically zero)", "-A row ξ_θ [rad/rad]")
    for k, ax in enumerate(fig.subplots(1, 3)):
        u, v = field[k, 0], field[k, 1]
        mag = np.hypot(u, v)
        if k != 1:
            with np.errstate(invalid="ignore", divide="ignore"):
                q = ax.quiver(
                    a1,
                    a2,
                    np.ma.masked_invalid(u / mag),
                    np.ma.masked_invalid(v / mag),
                    np.ma.masked_invalid(np.log10(mag)),
                    cmap="viridis",
                    pivot="mid",
                )
            fig.colorbar(q, ax=ax, label="log10 |row|")
        ax.plot(loop[:, 0], loop[:, 1], color="tab:green", label="gait")
        ax.plot([-extent, extent], [-extent, extent], "k--", lw=0.8, label="α1 = α2")
        ax.set(title=titles[k], xlabel="α1 [rad]", ylabel="α2 [rad]", aspect="equal")
        ax.legend(loc="lower right", fontsize="small")
    out = Path(path)
    fig.savefig(out, dpi=80)
    return out

"""Joint-space gaits with analytic q, q_dot, q_ddot at any time t.

Joints are told apart by their axis: with the snake along e2 and e3 up, an e1 joint
pitches (lifts the next body) and an e3 joint yaws (bends sideways). Every periodic gait
here is, per joint k, q_k(t) = o_k + A_k sin(2 pi f t + phi_k) with its own offsets,
amplitudes and phases; :class:`QuinticGait` is the paper's point-to-point validation input
and :class:`Transition` blends any two gaits smoothly. :class:`GaitPlayer` is the gait node's
trajectory: a gait started, stopped and switched with C2 quintic blends.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from snake_dynamics.errors import GaitError
from snake_dynamics.model import AXES, SnakeModel

FloatArray = NDArray[np.float64]


class JointTrajectory(NamedTuple):
    """Joint angles [rad], rates [rad/s] and accelerations [rad/s^2], each shape (n,)."""

    q: FloatArray
    qd: FloatArray
    qdd: FloatArray


class Gait(ABC):
    """A joint trajectory t -> (q, q_dot, q_ddot) for n joints."""

    n_joints: int

    @abstractmethod
    def evaluate(self, t: float) -> JointTrajectory:
        """q, q_dot, q_ddot at time t [s]."""

    def __call__(self, t: float) -> JointTrajectory:
        return self.evaluate(t)

    def samples(self, times: FloatArray) -> JointTrajectory:
        """q [rad], q_dot [rad/s], q_ddot [rad/s^2] at every time of ``times`` [s], shape
        (m,): rows of shape (m, n) each. Here one :meth:`evaluate` per time; a gait that
        broadcasts over times (:class:`PeriodicGait`) samples them in one call."""
        rows = [self.evaluate(float(t)) for t in times]
        return JointTrajectory(*(np.array([row[i] for row in rows]) for i in range(3)))


def quintic_blend(tau: float) -> tuple[float, float, float]:
    """s, s', s'' of the quintic 10 tau^3 - 15 tau^4 + 6 tau^5 on [0, 1] (clamped outside).

    Zero first and second derivatives at both ends: joining pieces stays C2.
    """
    if tau <= 0.0:
        return 0.0, 0.0, 0.0
    if tau >= 1.0:
        return 1.0, 0.0, 0.0
    s = tau**3 * (10.0 + tau * (-15.0 + 6.0 * tau))
    ds = 30.0 * tau**2 * (1.0 - tau) ** 2
    dds = 60.0 * tau * (1.0 - tau) * (1.0 - 2.0 * tau)
    return s, ds, dds


def _finite(name: str, value: float, low: float, high: float, unit: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise GaitError(f"{name} must be a number [{unit}], got {value!r}") from exc
    if not (math.isfinite(v) and low <= v <= high):
        raise GaitError(f"{name} must be in [{low:g}, {high:g}] {unit}, got {value!r}")
    return v


def _per_joint(name: str, values: ArrayLike, n: int) -> FloatArray:
    arr = np.asarray(values, dtype=float)
    if arr.shape == ():
        arr = np.full(n, float(arr))
    if arr.shape != (n,) or not np.all(np.isfinite(arr)):
        raise GaitError(f"{name} must be a finite number or {n} finite numbers, got {values!r}")
    return arr


@dataclass(frozen=True)
class QuinticGait(Gait):
    """Point-to-point quintic per joint (the paper's validation input, MFM "validate").

    Joint k moves from ``q_start[k]`` to ``q_end[k]`` during
    [t_start[k], t_start[k] + duration[k]] and rests before and after.
    """

    q_start: FloatArray
    q_end: FloatArray
    t_start: FloatArray
    duration: FloatArray

    def __post_init__(self) -> None:
        n = np.asarray(self.q_start).size
        for name in ("q_start", "q_end", "t_start", "duration"):
            object.__setattr__(self, name, _per_joint(name, getattr(self, name), n))
        if np.any(self.duration <= 0.0):
            raise GaitError(f"duration must be > 0 s for every joint, got {self.duration.tolist()}")
        if np.any(np.abs(self.q_start) > math.pi) or np.any(np.abs(self.q_end) > math.pi):
            raise GaitError("q_start and q_end must lie in [-pi, pi] rad")

    @property
    def n_joints(self) -> int:  # type: ignore[override]
        return int(self.q_start.size)

    def evaluate(self, t: float) -> JointTrajectory:
        span = self.q_end - self.q_start
        pairs = zip(self.t_start, self.duration, strict=True)
        blends = np.array([quintic_blend((t - t0) / d) for t0, d in pairs])
        return JointTrajectory(
            self.q_start + span * blends[:, 0],
            span * blends[:, 1] / self.duration,
            span * blends[:, 2] / self.duration**2,
        )


@dataclass(frozen=True)
class PeriodicGait(Gait):
    """q_k(t) = offset_k + amplitude_k sin(2 pi frequency t + phase_k) for every joint k."""

    offsets: FloatArray
    amplitudes: FloatArray
    phases: FloatArray
    frequency: float
    name: str = "periodic"

    def __post_init__(self) -> None:
        n = np.asarray(self.offsets).size
        for field_name in ("offsets", "amplitudes", "phases"):
            object.__setattr__(
                self, field_name, _per_joint(field_name, getattr(self, field_name), n)
            )
        object.__setattr__(self, "frequency", _finite("frequency", self.frequency, 0.0, 10.0, "Hz"))
        if np.any(np.abs(self.offsets) + np.abs(self.amplitudes) > math.pi + 1e-12):
            raise GaitError("|offset| + |amplitude| must stay within pi rad for every joint")

    @property
    def n_joints(self) -> int:  # type: ignore[override]
        return int(self.offsets.size)

    def evaluate(self, t: float) -> JointTrajectory:
        """q, q_dot, q_ddot at time t [s], shape (n,) each."""
        omega = 2.0 * math.pi * self.frequency
        return _sinusoids(self.offsets, self.amplitudes, self.phases, omega, t)

    def samples(self, times: FloatArray) -> JointTrajectory:
        """q, q_dot, q_ddot at every time of ``times`` [s], shape (m,) (every RK4 stage time
        of a run), as rows of shape (m, n) from one call: the column of times broadcast
        against the joints, with the sine taken only for the joints that move (a joint of
        amplitude 0, the serpenoid's pitch joints, rests at its offset). The values of one
        :meth:`evaluate` per time, bit for bit (zeros without their sign), half the sines
        of a crawl's sampling.
        """
        omega = 2.0 * math.pi * self.frequency
        t = np.asarray(times, dtype=np.float64)[:, None]
        moving = np.flatnonzero(self.amplitudes)
        part = _sinusoids(
            self.offsets[moving], self.amplitudes[moving], self.phases[moving], omega, t
        )
        shape = (t.shape[0], self.offsets.size)
        rows = JointTrajectory(np.empty(shape), np.zeros(shape), np.zeros(shape))
        rows.q[...] = self.offsets
        for whole, moved in zip(rows, part, strict=True):
            whole[..., moving] = moved
        return rows


def _sinusoids(
    offsets: FloatArray,
    amplitudes: FloatArray,
    phases: FloatArray,
    omega: float,
    t: float | FloatArray,
) -> JointTrajectory:
    """q = o + A sin(omega t + phi), its rate and acceleration, per joint (:class:`PeriodicGait`
    with omega = 2 pi f [rad/s]) at the time t [s], or at a column of times (m, 1) as rows."""
    arg = omega * t + phases
    s, c = np.sin(arg), np.cos(arg)
    return JointTrajectory(
        offsets + amplitudes * s, amplitudes * omega * c, -amplitudes * omega**2 * s
    )


@dataclass(frozen=True)
class Transition(Gait):
    """Blend from gait ``a`` to gait ``b`` over [t_start, t_start + duration] (quintic, C2)."""

    a: Gait
    b: Gait
    t_start: float
    duration: float

    def __post_init__(self) -> None:
        if self.a.n_joints != self.b.n_joints:
            raise GaitError(f"cannot blend gaits of {self.a.n_joints} and {self.b.n_joints} joints")
        _finite("duration", self.duration, 1e-6, 3600.0, "s")
        _finite("t_start", self.t_start, -math.inf, math.inf, "s")

    @property
    def n_joints(self) -> int:  # type: ignore[override]
        return self.a.n_joints

    def evaluate(self, t: float) -> JointTrajectory:
        s, ds, dds = quintic_blend((t - self.t_start) / self.duration)
        if s == 0.0 and ds == 0.0:
            return self.a.evaluate(t)
        if s == 1.0:
            return self.b.evaluate(t)
        ds, dds = ds / self.duration, dds / self.duration**2
        qa, va, aa = self.a.evaluate(t)
        qb, vb, ab = self.b.evaluate(t)
        diff = qb - qa
        return JointTrajectory(
            qa + s * diff,
            va + s * (vb - va) + ds * diff,
            aa + s * (ab - aa) + 2.0 * ds * (vb - va) + dds * diff,
        )


# ----------------------------------------------------------------------- gait builders
def joint_roles(axes: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Indices of the pitch (e1) and yaw (e3) joints among joint axes of shape (n, 3)."""
    a = np.asarray(axes, dtype=float)
    pitch = np.flatnonzero(np.abs(a @ np.array(AXES["x"])) > 0.99)
    yaw = np.flatnonzero(np.abs(a @ np.array(AXES["z"])) > 0.99)
    return pitch, yaw


@dataclass(frozen=True)
class GaitSpec:
    """A named gait: its parameters with defaults and ranges, and its builder."""

    description: str
    params: Mapping[str, tuple[float, float, float, str]]  # name -> (default, low, high, unit)
    build: Callable[[FloatArray, dict[str, float]], Gait]
    moves: tuple[str, ...] = ("pitch", "yaw")  # the joint roles it needs (joint_roles)


def _wave(
    axes: FloatArray,
    name: str,
    freq: float,
    pitch: tuple[FloatArray, FloatArray, FloatArray],
    yaw: tuple[FloatArray, FloatArray, FloatArray],
) -> PeriodicGait:
    """Assemble per-role (offset, amplitude, phase) arrays into one PeriodicGait."""
    n = axes.shape[0]
    off, amp, ph = np.zeros(n), np.zeros(n), np.zeros(n)
    for idx, (o, a, p) in zip(joint_roles(axes), (pitch, yaw), strict=False):
        off[idx], amp[idx], ph[idx] = o, a, p
    return PeriodicGait(off, amp, ph, freq, name)


def _travelling(count: int, lag: float) -> FloatArray:
    """Phases of a wave travelling from head to tail: joint i (tail first) leads by i * lag."""
    return lag * np.arange(count, dtype=np.float64)


def _yaw_wave(
    axes: FloatArray, name: str, freq: float, yaw: tuple[FloatArray, FloatArray, FloatArray]
) -> Gait:
    """A wave on the yaw joints alone (offset, amplitude, phase per joint); pitch held at 0."""
    z = np.zeros(joint_roles(axes)[0].size)
    return _wave(axes, name, freq, (z, z, z), yaw)


def _serpenoid(axes: FloatArray, p: dict[str, float]) -> Gait:
    n = joint_roles(axes)[1].size
    return _yaw_wave(
        axes,
        "serpenoid",
        p["frequency"],
        (
            np.full(n, p["offset"]),
            np.full(n, p["amplitude"]),
            _travelling(n, p["phase_lag"]),
        ),
    )


def _quadrature(
    axes: FloatArray, name: str, freq: float, pitch_amplitude: float, amplitude: float, lag: float
) -> Gait:
    """Pitch and yaw waves of one lag per joint [rad], the pitch a quarter period ahead."""
    pitch, yaw = joint_roles(axes)
    return _wave(
        axes,
        name,
        freq,
        (
            np.zeros(pitch.size),
            np.full(pitch.size, pitch_amplitude),
            _travelling(pitch.size, lag) + math.pi / 2,
        ),
        (np.zeros(yaw.size), np.full(yaw.size, amplitude), _travelling(yaw.size, lag)),
    )


def _sidewinding(axes: FloatArray, p: dict[str, float]) -> Gait:
    return _quadrature(
        axes, "sidewinding", p["frequency"], p["pitch_amplitude"], p["amplitude"], p["phase_lag"]
    )


def _spiral(axes: FloatArray, p: dict[str, float]) -> Gait:
    # A helix: constant curvature whose bending plane turns by ``twist`` per joint pair;
    # the whole helix turns about the body at ``frequency``.
    return _quadrature(axes, "spiral", p["frequency"], p["amplitude"], p["amplitude"], p["twist"])


def _rolling(axes: FloatArray, p: dict[str, float]) -> Gait:
    # Every joint in phase (no lag): the body keeps an arc whose bending plane turns (rolls).
    return _quadrature(axes, "rolling", p["frequency"], p["amplitude"], p["amplitude"], 0.0)


def _accordion(axes: FloatArray, p: dict[str, float]) -> Gait:
    # Concertina: yaw joints fold alternately left/right, q = +-A (1 - cos(wt - i lag)) / 2,
    # i.e. offset +-A/2 and amplitude A/2 with a -pi/2 phase; the fold travels along the body.
    n = joint_roles(axes)[1].size
    sign = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    half = 0.5 * p["amplitude"]
    return _yaw_wave(
        axes,
        "accordion",
        p["frequency"],
        (sign * half, sign * half, -_travelling(n, p["phase_lag"]) - math.pi / 2),
    )


def _cobra(axes: FloatArray, p: dict[str, float]) -> Gait:
    # Serpenoid on the yaw joints; the head is raised by the front pitch joints: the first
    # of the last ``head_joints`` pitch joints lifts by head_lift, the last one levels the head.
    pitch, yaw = joint_roles(axes)
    count = min(round(p["head_joints"]), pitch.size)
    off = np.zeros(pitch.size)
    if count >= 1:
        off[pitch.size - count] = p["head_lift"]
    if count >= 2:
        off[-1] = -p["head_lift"]
    z = np.zeros(pitch.size)
    return _wave(
        axes,
        "cobra",
        p["frequency"],
        (off, z, z),
        (
            np.zeros(yaw.size),
            np.full(yaw.size, p["amplitude"]),
            _travelling(yaw.size, p["phase_lag"]),
        ),
    )


_WAVE = {
    "amplitude": (0.5, 0.0, 1.5, "rad"),
    "frequency": (0.5, 0.0, 5.0, "Hz"),
    "phase_lag": (0.8, -math.pi, math.pi, "rad"),
}

#: The gaits by name, with their parameters (default, low, high, unit).
GAITS: dict[str, GaitSpec] = {
    "serpenoid": GaitSpec(
        "lateral undulation: travelling sine on the yaw joints",
        {**_WAVE, "offset": (0.0, -0.5, 0.5, "rad")},
        _serpenoid,
        ("yaw",),
    ),
    "sidewinding": GaitSpec(
        "yaw and pitch waves a quarter period apart",
        {**_WAVE, "pitch_amplitude": (0.3, 0.0, 1.0, "rad")},
        _sidewinding,
    ),
    "spiral": GaitSpec(
        "3D helix turning about the body axis",
        {
            "amplitude": (0.3, 0.0, 1.0, "rad"),
            "frequency": (0.2, 0.0, 5.0, "Hz"),
            "twist": (0.6, -math.pi, math.pi, "rad"),
        },
        _spiral,
    ),
    "rolling": GaitSpec(
        "arc whose bending plane rolls about the body axis",
        {"amplitude": (0.3, 0.0, 1.0, "rad"), "frequency": (0.3, 0.0, 5.0, "Hz")},
        _rolling,
    ),
    "accordion": GaitSpec(
        "concertina: alternating folds that travel along the body",
        {**_WAVE, "amplitude": (0.8, 0.0, 1.5, "rad")},
        _accordion,
        ("yaw",),
    ),
    "cobra": GaitSpec(
        "serpenoid with the head raised by the front pitch joints",
        {**_WAVE, "head_lift": (0.6, 0.0, 1.2, "rad"), "head_joints": (2.0, 1.0, 4.0, "joints")},
        _cobra,
    ),
}


def gait_parameters(name: str) -> Mapping[str, tuple[float, float, float, str]]:
    """The parameters of gait ``name``: {param: (default, low, high, unit)}."""
    if name not in GAITS:
        raise GaitError(f"unknown gait {name!r}; choose one of {', '.join(sorted(GAITS))}")
    return GAITS[name].params


def make_gait(name: str, axes: SnakeModel | ArrayLike, **params: Any) -> Gait:
    """Build a periodic gait by name for the given joint axes (or model).

    Args:
        name: one of :data:`GAITS`.
        axes: the model, or joint axes of shape (n, 3).
        **params: gait parameters (see :func:`gait_parameters`); missing ones default.

    Raises:
        GaitError: unknown gait or parameter, a value out of its range, a joint count that
            is not whole, or a model without the pitch (e1) / yaw (e3) joints the gait moves.
    """
    spec_params = gait_parameters(name)
    unknown = set(params) - set(spec_params)
    if unknown:
        raise GaitError(
            f"gait {name!r} has no parameter(s) {sorted(unknown)}; it takes {sorted(spec_params)}"
        )
    values = {
        key: _finite(f"{name}.{key}", params.get(key, default), low, high, unit)
        for key, (default, low, high, unit) in spec_params.items()
    }
    for key, value in values.items():
        if spec_params[key][3] == "joints" and value != round(value):
            raise GaitError(f"{name}.{key} must be a whole number of joints, got {value:g}")
    axes_array = np.asarray(axes.axes if isinstance(axes, SnakeModel) else axes, dtype=float)
    roles = dict(zip(("pitch", "yaw"), joint_roles(axes_array), strict=True))
    missing = [role for role in GAITS[name].moves if roles[role].size == 0]
    if missing:
        axis = {"pitch": "e1", "yaw": "e3"}
        raise GaitError(
            f"gait {name!r} moves the {' and '.join(f'{r} ({axis[r]})' for r in missing)} "
            "joints, and this snake has none"
        )
    return GAITS[name].build(axes_array, values)


def staggered_quintic(
    n_joints: int,
    amplitude: float = 0.5,
    duration: float = 1.0,
    stagger: float = 0.05,
    q_start: Sequence[float] | None = None,
) -> QuinticGait:
    """The paper's validation input: each joint swings 0 -> +-amplitude, joint k starting
    ``k * stagger`` seconds after joint 1 (alternating signs).

    Args:
        n_joints: n.
        amplitude: end angle magnitude [rad].
        duration: motion time of each joint [s].
        stagger: start delay between consecutive joints [s].
        q_start: start angles [rad] (default zeros).
    """
    if n_joints < 1:
        raise GaitError(f"n_joints must be >= 1, got {n_joints}")
    signs = np.where(np.arange(n_joints) % 2 == 0, 1.0, -1.0)
    start = np.zeros(n_joints) if q_start is None else np.asarray(q_start, dtype=float)
    return QuinticGait(
        q_start=start,
        q_end=start + signs * _finite("amplitude", amplitude, 0.0, math.pi, "rad"),
        t_start=np.arange(n_joints, dtype=np.float64) * _finite("stagger", stagger, 0.0, 60.0, "s"),
        duration=np.full(n_joints, _finite("duration", duration, 1e-3, 3600.0, "s")),
    )


# ----------------------------------------------------------------------------- player
def _settle(gait: Gait, t: float) -> Gait:
    """``gait`` with the transitions finished by time t [s] replaced by their targets."""
    if not isinstance(gait, Transition):
        return gait
    if t >= gait.t_start + gait.duration:
        return _settle(gait.b, t)
    return dataclasses.replace(gait, a=_settle(gait.a, t), b=_settle(gait.b, t))


class GaitPlayer:
    """A gait that can be started, stopped and switched at any time, staying C2.

    Starting blends from rest (all joints at zero) into the gait over ``ramp_time``,
    stopping blends back to rest; switching gaits or parameters blends over
    ``transition_time`` (:class:`Transition`, quintic: the commanded velocity never exceeds
    the two gaits' plus 1.875 |q_b - q_a| / duration).

    Args:
        gait: the gait to play.
        transition_time: blend time of a gait change [s].
        ramp_time: blend time of start and stop [s].
    """

    def __init__(self, gait: Gait, *, transition_time: float, ramp_time: float) -> None:
        zero = np.zeros(gait.n_joints)
        self.rest: Gait = PeriodicGait(zero, zero, zero, 0.0, "rest")
        self.gait = gait
        self.transition_time = transition_time
        self.ramp_time = ramp_time
        self.running = False
        self._current: Gait = self.rest

    def _blend(self, t: float, target: Gait, duration: float) -> None:
        self._current = Transition(_settle(self._current, t), target, t, duration)

    def start(self, t: float) -> bool:
        """Ramp into the gait from time t [s]; False if it is already running."""
        if self.running:
            return False
        self.running = True
        self._blend(t, self.gait, self.ramp_time)
        return True

    def stop(self, t: float) -> bool:
        """Ramp out of the gait to rest from time t [s]; False if it is already stopped."""
        if not self.running:
            return False
        self.running = False
        self._blend(t, self.rest, self.ramp_time)
        return True

    def set_gait(self, t: float, gait: Gait) -> None:
        """Switch to ``gait`` from time t [s] (blended if running, else used at the next start).

        Raises:
            GaitError: ``gait`` has another number of joints.
        """
        if gait.n_joints != self.gait.n_joints:
            raise GaitError(f"the gait has {gait.n_joints} joints, the snake {self.gait.n_joints}")
        if self.running:
            self._blend(t, gait, self.transition_time)
        self.gait = gait

    def evaluate(self, t: float) -> JointTrajectory:
        """Commanded q [rad], q_dot [rad/s], q_ddot [rad/s^2] at time t [s], shape (n,)."""
        self._current = _settle(self._current, t)
        return self._current.evaluate(t)

    @property
    def current(self) -> Gait:
        """What plays now, blends included, as a gait: a pure function of time (evaluating it
        ahead of time, as compensated commands do, changes nothing in the player)."""
        return self._current

"""Floor identification: the path a crawling robot's marker takes, predicted by the servos on
the free body (eqs. 240-242) driven by what the servos were told, and the least-squares fit
of the ground's friction coefficients to a measured path (docs/mfm.md, "Identifying the
floor", eqs. 243-245; no ROS, no I/O).

* :class:`PathRecording` holds a crawling take: the servos' reference at the telemetry's
  instants and the external pose sensor's marker positions and headings at its own.
* :func:`predict_path` runs the take's reference through the servo model on the robot lying
  on a ground, from the marker's first measured pose, and samples the marker (the tail's CM)
  at the pose sensor's instants (eq. 243).
* :func:`path_error` is the distance between the measured and the predicted marker in the
  plane at each pose sample (eq. 244), :func:`aligned_error` the same after the rigid motion
  that fits the whole path (eq. 248); :func:`joint_error` the measured joints' distance from
  the predicted ones, as a length (eq. 246).
* :func:`fit_ground` finds the friction coefficients that make :func:`predict_crawl` closest
  to the measured path (aligned) and joints over one or more takes (eq. 245), searching the
  friction's level on its own (:func:`level_search`, eq. 262).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.transform import Rotation

from snake_dynamics.errors import IdentificationError, ModelError, SimulationError
from snake_dynamics.floating import FloatingState, lying_state, on_the_ground
from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim.crawler import BASE, CrawlingSimulator
from snake_dynamics.sim.identification import (
    SampledReference,
    in_parallel,
    residuals,
    standard_errors,
)

FloatArray = NDArray[np.float64]

#: The ground parameters a fit may vary: the Coulomb coefficients (fitted as logs).
FITTABLE = ("mu_along", "mu_across", "mu_backward")
#: What :func:`fit_ground` fits unless told otherwise.
DEFAULT_FITTED = ("mu_along", "mu_across")
#: The coarse search before the least squares (eq. 247): each coefficient's span, from a
#: waxed table to rubber, and the grid's points per coefficient (log-spaced).
SEARCH_SPAN = (0.03, 1.2)
SEARCH_POINTS = 8
#: The residual [m] beyond which the fit counts an error less than its square (eq. 245's
#: soft-L1 loss): a crawl mispredicted by centimetres on every floor (sidewinding under
#: servos that are not the robot's) must not drag the others off what they fit well.
ROBUST_SCALE = 0.005
#: The level search's reach and tolerance (eq. 262): ln of the common factor, +-0.4 (a
#: factor 0.67-1.49, the least squares' start a grid step of 1.69 off at worst) to 0.002.
LEVEL_SPAN = 0.4
LEVEL_TOL = 2e-3


@dataclass(frozen=True)
class PathRecording:
    """A crawling take: what the servos were told, and where the marker was.

    Attributes:
        t: the reference's sample times [s], increasing, shape (m,).
        reference: the servos' commanded angles [rad], shape (m, n).
        pose_t: the pose sensor's sample times [s], increasing, within [t[0], t[-1]], (k,).
        xy: the marker's measured position in the ground plane [m], shape (k, 2).
        yaw: the marker's measured heading [rad] (the tail's, eq. 221's R_0 about z), (k,).
        orientation: the marker's measured orientation at the first pose, (x, y, z, w),
            shape (4,): a straight snake of cylinders rolls freely about its length, and a
            crawl may leave it rolled; None: lying flat at ``yaw[0]``.
        measured: the joints' measured angles (the pots) at ``t`` [rad], shape (m, n); None:
            the path alone.
    """

    t: FloatArray
    reference: FloatArray
    pose_t: FloatArray
    xy: FloatArray
    yaw: FloatArray
    orientation: FloatArray | None = None
    measured: FloatArray | None = None

    def __post_init__(self) -> None:
        t, ref, pt, xy, yaw = (
            np.asarray(x, dtype=np.float64)
            for x in (self.t, self.reference, self.pose_t, self.xy, self.yaw)
        )
        if t.ndim != 1 or t.size < 3 or ref.ndim != 2 or ref.shape[0] != t.size:
            raise IdentificationError(
                f"a take needs >= 3 reference samples of its joints, got t {t.shape}, "
                f"reference {ref.shape}"
            )
        if pt.ndim != 1 or pt.size < 2 or xy.shape != (pt.size, 2) or yaw.shape != pt.shape:
            raise IdentificationError(
                f"a take needs >= 2 pose samples (t, x, y, yaw), got {pt.shape}, {xy.shape}, "
                f"{yaw.shape}"
            )
        finite = all(np.all(np.isfinite(a)) for a in (t, ref, pt, xy, yaw))
        if not (finite and np.all(np.diff(t) > 0.0) and np.all(np.diff(pt) > 0.0)):
            raise IdentificationError("a take's times must increase and every value be finite")
        if pt[0] < t[0] or pt[-1] > t[-1]:
            raise IdentificationError(
                f"the pose samples ({pt[0]:.3f}-{pt[-1]:.3f} s) must lie within the reference's "
                f"({t[0]:.3f}-{t[-1]:.3f} s)"
            )
        for name, value in (("t", t), ("reference", ref), ("pose_t", pt), ("xy", xy)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "yaw", yaw)
        if self.orientation is not None:
            quat = np.asarray(self.orientation, dtype=np.float64)
            norm = float(np.linalg.norm(quat)) if quat.shape == (4,) else math.nan
            if not abs(norm - 1.0) < 1e-3:
                raise IdentificationError(
                    f"a take's first orientation must be a unit quaternion (x, y, z, w), got "
                    f"{self.orientation!r}"
                )
            object.__setattr__(self, "orientation", quat / norm)
        if self.measured is not None:
            measured = np.asarray(self.measured, dtype=np.float64)
            if measured.shape != ref.shape or not np.all(np.isfinite(measured)):
                raise IdentificationError(
                    f"a take's measured joints must be finite and shaped as its reference "
                    f"{ref.shape}, got {measured.shape}"
                )
            object.__setattr__(self, "measured", measured)


def start_state(model: SnakeModel, recording: PathRecording) -> FloatingState:
    """The robot lying straight at rest with its tail at the take's first measured pose
    (position in the plane, and the measured orientation, or the heading lying flat), at
    the height :func:`floating.lying_state` gives."""
    lying = lying_state(model)
    yaw = float(recording.yaw[0])
    position = np.array([recording.xy[0, 0], recording.xy[0, 1], lying.position[2]])
    quaternion = (
        np.array([0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0)])
        if recording.orientation is None
        else recording.orientation
    )
    return lying._replace(position=position, quaternion=quaternion)


@dataclass(frozen=True)
class CrawlPrediction:
    """A take predicted (eq. 243).

    Attributes:
        xy: the marker's position in the plane at every pose sample [m], shape (k, 2).
        q: the joint angles at every reference sample [rad], shape (m, n).
    """

    xy: FloatArray
    q: FloatArray


def predict_crawl(
    model: SnakeModel,
    servo: ServoModel,
    ground: Ground,
    recording: PathRecording,
    dt: float = 0.001,
) -> CrawlPrediction:
    """The marker's path and the joints under the take's reference (eq. 243): the servos on
    the free body lying on ``ground`` (eqs. 240-242), from rest at the first reference with
    the tail at the first measured pose, each servo seeing the reference its dead time late.

    Args:
        model: the robot's body (made floating on ``ground`` under gravity here).
        servo: the servos (one dead time for every joint).
        ground: the floor.
        recording: the take.
        dt: the step [s].

    Raises:
        IdentificationError: servos with different dead times, or a prediction that left
            the finite numbers.
    """
    dead = np.unique(servo.dead_times)
    if dead.size != 1:
        raise IdentificationError("predict_crawl() takes servos with one dead time for every joint")
    grounded = on_the_ground(dataclasses.replace(model, ground=ground))
    sim = CrawlingSimulator(grounded, dt, servo=servo, t0=float(recording.t[0]))
    n = model.n_joints
    start = start_state(model, recording)
    sim.reset(float(recording.t[0]), recording.reference[0], np.zeros(n), start)
    source = SampledReference(recording.t, recording.reference, float(dead[0]))
    end = max(recording.pose_t[-1], recording.t[-1])
    steps = math.ceil((end - recording.t[0]) / dt) + 1
    try:
        states = sim.run(steps, source)
    except SimulationError as exc:
        raise IdentificationError(f"the path's prediction diverged: {exc}") from None
    positions = np.vstack([start.position[None, :2], states[:, :2]])
    joints = np.vstack([recording.reference[:1], states[:, BASE : BASE + n]])
    grid = recording.t[0] + dt * np.arange(steps + 1)
    return CrawlPrediction(
        np.column_stack([np.interp(recording.pose_t, grid, positions[:, c]) for c in (0, 1)]),
        np.column_stack([np.interp(recording.t, grid, joints[:, j]) for j in range(n)]),
    )


def predict_path(
    model: SnakeModel,
    servo: ServoModel,
    ground: Ground,
    recording: PathRecording,
    dt: float = 0.001,
) -> FloatArray:
    """The marker's predicted position in the plane at every pose sample [m], shape (k, 2):
    :func:`predict_crawl`'s path (eq. 243).

    Raises:
        IdentificationError: as :func:`predict_crawl`.
    """
    return predict_crawl(model, servo, ground, recording, dt).xy


def path_error(predicted: FloatArray, recording: PathRecording) -> FloatArray:
    """|measured - predicted| of the marker in the plane at every pose sample (eq. 244) [m]."""
    return np.asarray(np.hypot(*(recording.xy - predicted).T))


def aligned_path(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """A predicted path [m], shape (k, 2), moved by the rigid motion in the plane that brings
    it closest to the measured one in the least-squares sense (scipy's
    ``Rotation.align_vectors``): on a level, uniform floor, the prediction from the start
    pose that fits the whole path best, where eq. 243 starts from the first pose alone, as
    noisy as any (eq. 248)."""
    p0, m0 = predicted.mean(axis=0), measured.mean(axis=0)
    pad = np.zeros((len(predicted), 1))
    rotation, _ = Rotation.align_vectors(
        np.hstack([measured - m0, pad]), np.hstack([predicted - p0, pad])
    )
    return np.asarray(rotation.apply(np.hstack([predicted - p0, pad]))[:, :2] + m0)


def aligned_error(predicted: FloatArray, recording: PathRecording) -> FloatArray:
    """|measured - aligned predicted| of the marker in the plane at every pose sample [m]:
    eq. 244's error of the prediction moved by eq. 248's rigid motion (the start pose that
    fits the whole path, not the first pose's noise)."""
    return path_error(aligned_path(predicted, recording.xy), recording)


def joint_error(model: SnakeModel, predicted: FloatArray, recording: PathRecording) -> FloatArray:
    """The measured joints' distance from the predicted ones as a length (eq. 246): L̄ times
    each joint's error with its mean removed (a pot's constant offset, eq. 209), L̄ the links'
    mean length, the sideways step a joint's error makes at the next link's end [m], shape
    (m n,); empty for a take without measured joints."""
    if recording.measured is None:
        return np.empty(0)
    return np.asarray(mean_link(model) * residuals(predicted, recording.measured).ravel())


def mean_link(model: SnakeModel) -> float:
    """L̄ of eq. 246: the links' mean length [m] (the tail not counted)."""
    return float(np.mean(model.lengths[1:]))


@dataclass(frozen=True)
class GroundFit:
    """A least-squares fit of the floor (eq. 245).

    Attributes:
        ground: the fitted floor (the start's other parameters kept).
        fitted: the names of the fitted parameters.
        stderr: each fitted parameter's standard error.
        rms_before: each take's RMS path error with the starting floor, aligned (eq. 248)
            [m].
        rms_after: each take's RMS path error with the fitted floor, aligned [m].
        joint_rms_before: each take's RMS joint error with the starting floor [rad] (NaN
            for a take without measured joints).
        joint_rms_after: the same with the fitted floor [rad].
        evaluations: path predictions the fit ran, the start's included (each covers
            every take; a point the fit comes back to is not predicted again).
    """

    ground: Ground
    fitted: tuple[str, ...]
    stderr: dict[str, float]
    rms_before: FloatArray
    rms_after: FloatArray
    joint_rms_before: FloatArray
    joint_rms_after: FloatArray
    evaluations: int


def _rms(errors: FloatArray) -> float:
    return float(np.sqrt(np.mean(errors**2)))


def robust_cost(residual: FloatArray, scale: float) -> float:
    """Eq. 245's cost of ``residual``: sum of scale^2 * 2 (sqrt(1 + (r/scale)^2) - 1),
    r^2 for small r and 2 scale |r| for large (scipy's soft_l1 loss); the plain sum of
    squares for ``scale`` inf."""
    if math.isinf(scale):
        return float(np.sum(residual**2))
    return float(np.sum(2.0 * scale**2 * (np.sqrt(1.0 + (residual / scale) ** 2) - 1.0)))


def coarse_search(
    fun: Callable[[FloatArray], FloatArray],
    x0: FloatArray,
    names: Sequence[str],
    scale: float = ROBUST_SCALE,
) -> FloatArray:
    """The least squares' start (eq. 247): the best of ``x0`` and a log-spaced grid of
    :data:`SEARCH_POINTS` per coefficient over :data:`SEARCH_SPAN` (mu_backward, when
    fitted, at mu_along's value; mu_across at least mu_along). A crawl's path is not smooth
    in the friction: sidewinding, lifting bodies and setting them down, crawls one way on
    one floor and another way on a floor a few per cent off, so gradients from a far start
    lead astray, and the coarse grid finds the right basin. The grid is searched coarse to
    fine: every other point first, then from the best of those to the best of its eight
    neighbours until none is better (18-24 of the grid's 36 points on the table's crawls,
    the same best point as the whole grid's).

    Args:
        fun: the residuals of a point (ln of each coefficient of ``names``).
        x0: the starting point (the config's floor).
        names: the fitted coefficients, in ``x0``'s order.
        scale: :func:`robust_cost`'s scale [m].

    Returns:
        The point of the least cost.
    """
    axis = np.log(np.geomspace(*SEARCH_SPAN, SEARCH_POINTS))
    costs: dict[tuple[float, ...], float] = {}

    def point(cell: tuple[int, int]) -> tuple[float, ...]:
        along, across = axis[cell[0]], axis[cell[1]]
        return tuple(
            float({"mu_along": along, "mu_across": across, "mu_backward": along}[n]) for n in names
        )

    def cost(cell: tuple[int, int]) -> tuple[float, tuple[int, int]]:
        key = point(cell)
        if key not in costs:
            costs[key] = robust_cost(fun(np.array(key)), scale)
        return costs[key], cell

    start_cost = robust_cost(fun(x0), scale)
    last = SEARCH_POINTS - 1
    best = min(cost((i, j)) for i in range(0, last, 2) for j in range(i, last, 2))[1]
    while True:
        around = (
            (best[0] + a, best[1] + b)
            for a in (-1, 0, 1)
            for b in (-1, 0, 1)
            if 0 <= best[0] + a <= best[1] + b <= last
        )
        found = min(cost(cell) for cell in around)[1]
        if found == best:
            break
        best = found
    return np.array(point(best)) if cost(best)[0] < start_cost else x0


def level_search(
    fun: Callable[[FloatArray], FloatArray],
    x: FloatArray,
    scale: float = ROBUST_SCALE,
) -> FloatArray:
    """The friction's level along the fit's weak direction (eq. 262): every coefficient
    scaled by one factor e^c, c within +-:data:`LEVEL_SPAN` (scipy's bounded Brent search,
    to :data:`LEVEL_TOL`). A floor with every coefficient scaled alike crawls nearly the
    same path, and the cost (245) is smooth along that valley but kinked across it (a body
    lifting a moment later lands elsewhere): the least squares' finite-difference gradient,
    taken across the valley, points the wrong way along it and stops short of its floor.

    Args:
        fun: the residuals of a point (ln of each fitted coefficient).
        x: the point to search from.
        scale: :func:`robust_cost`'s scale [m].

    Returns:
        ``x`` moved along (1, ..., 1) to the least cost, or ``x`` itself where no point
        of the search costs less.
    """
    from scipy.optimize import minimize_scalar

    ones = np.ones_like(x)
    start = robust_cost(fun(x), scale)
    found = minimize_scalar(
        lambda c: robust_cost(fun(x + c * ones), scale),
        bounds=(-LEVEL_SPAN, LEVEL_SPAN),
        method="bounded",
        options={"xatol": LEVEL_TOL},
    )
    return x + float(found.x) * ones if float(found.fun) < start else x


def fit_ground(
    model: SnakeModel,
    servo: ServoModel,
    takes: Sequence[PathRecording],
    start: Ground,
    *,
    fitted: Sequence[str] = DEFAULT_FITTED,
    dt: float = 0.001,
    progress: Callable[[int, float], None] | None = None,
    robust_scale: float = ROBUST_SCALE,
) -> GroundFit:
    """The floor's friction coefficients that best predict the measured paths and joints
    (eq. 245: nonlinear least squares over the path errors after the rigid motion that fits
    each whole path (248: the start pose, not the first pose's noise) and the joint errors
    (246) of every take, scipy's trust-region reflective method, the coefficients as logs;
    from the coarse search's start (247), then the level search (262) and the least squares
    again). A crawl's path barely tells a floor from one with every coefficient scaled
    alike (slow crawls are nearly quasi-static: the friction forces' directions and ratios
    set the path); the servos' load, in the measured joints, tells their level.

    Args:
        model: the robot's body.
        servo: the robot's servos (identified first: the fit trusts them).
        takes: crawling takes with measured paths (and joints, where measured).
        start: the starting floor (e.g. the robot config's); its other parameters are kept.
        fitted: which of :data:`FITTABLE` to fit.
        dt: the prediction's step [s].
        progress: called with (evaluations, RMS path error [m]) after each prediction.
        robust_scale: the soft-L1 loss's scale [m] (:func:`robust_cost`; inf: plain least
            squares).

    Raises:
        IdentificationError: no takes, an unknown parameter, or no prediction stays finite.
    """
    from scipy.optimize import least_squares

    unknown = sorted(set(fitted) - set(FITTABLE))
    if unknown or not fitted:
        raise IdentificationError(f"fit some of {list(FITTABLE)}, got {list(fitted)}")
    if not takes:
        raise IdentificationError("the floor fit needs at least one crawling take")
    names = tuple(fitted)
    first = {name: getattr(start, name) for name in names}
    if first.get("mu_backward", 0.0) is None:
        first["mu_backward"] = start.mu_along
    if any(not (value and value > 0.0) for value in first.values()):
        raise IdentificationError(f"start the floor fit from coefficients > 0, got {first}")
    sizes = [t.pose_t.size + (0 if t.measured is None else t.measured.size) for t in takes]

    def floor(x: FloatArray) -> Ground:
        values: dict[str, Any] = {k: float(math.exp(v)) for k, v in zip(names, x, strict=True)}
        return dataclasses.replace(start, **values)

    def errors(ground: Ground) -> list[tuple[FloatArray, FloatArray]]:
        def one(take: PathRecording) -> tuple[FloatArray, FloatArray]:
            predicted = predict_crawl(model, servo, ground, take, dt)
            return aligned_error(predicted.xy, take), joint_error(model, predicted.q, take)

        return in_parallel(one, takes)

    # each point's errors, predicted once: the searches and the least squares come back to
    # points they have had (the start, the grid's best, the level's), None where diverged
    known: dict[bytes, list[tuple[FloatArray, FloatArray]] | None] = {}

    def fun(x: FloatArray) -> FloatArray:
        key = np.asarray(x, dtype=np.float64).tobytes()
        if key not in known:
            try:
                known[key] = errors(floor(x))
            except (IdentificationError, ModelError):
                known[key] = None
            if progress is not None:
                found = known[key]
                paths = [np.ones(1)] if found is None else [path for path, _ in found]
                progress(len(known), _rms(np.concatenate(paths)))
        per_take = known[key]
        if per_take is None:
            return np.full(sum(sizes), 1.0)  # far off: step back
        return np.concatenate([np.concatenate(pair) for pair in per_take])

    def rms_each(per_take: list[tuple[FloatArray, FloatArray]]) -> tuple[FloatArray, FloatArray]:
        paths = np.array([_rms(path) for path, _ in per_take])
        joints = np.array(
            [_rms(joint) / mean_link(model) if joint.size else math.nan for _, joint in per_take]
        )
        return paths, joints

    x0 = np.log([first[name] for name in names])
    known[x0.tobytes()] = start_errors = errors(floor(x0))
    before, joints_before = rms_each(start_errors)
    loss = ("linear", 1.0) if math.isinf(robust_scale) else ("soft_l1", robust_scale)

    def polish(start_x: FloatArray) -> Any:
        return least_squares(
            fun,
            start_x,
            x_scale=1.0,
            diff_step=1e-2,
            ftol=1e-6,
            xtol=1e-3,
            loss=loss[0],
            f_scale=loss[1],
        )

    result = polish(coarse_search(fun, x0, names, robust_scale))
    level = level_search(fun, result.x, robust_scale)
    if not np.array_equal(level, result.x):
        result = polish(level)
    fitted_ground = floor(result.x)
    sd = standard_errors(result.jac, result.cost)
    stderr = {
        name: float(getattr(fitted_ground, name) * s) for name, s in zip(names, sd, strict=True)
    }
    after, joints_after = rms_each(known.get(result.x.tobytes()) or errors(fitted_ground))
    return GroundFit(
        fitted_ground, names, stderr, before, after, joints_before, joints_after, len(known)
    )

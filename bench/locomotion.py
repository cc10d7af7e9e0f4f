"""10 s of the 20-body snake crawling on the ground at dt = 1 ms: ours against MuJoCo.

Ours: ``on_the_ground(config/snake20.yaml)`` (joint axes alternate e1 pitch / e3 yaw; the
serpenoid of ``make_gait("serpenoid", model)`` drives the yaw joints, the pitch joints are
held at zero), the gait prescribed exactly (eq. 228), RK4 at dt from ``lying_state``, with
``snake_dynamics.floating.recursive.simulate_prescribed_fast``, or the literal
``floating.simulate_prescribed`` (``--implementation literal``), or (``--implementation
servos``) the joints under PD servos with MuJoCo's own gains and targets, angle and rate
(``snake_dynamics.sim.crawler.simulate_crawling``, eqs. 240-242): the like-for-like match of
MuJoCo's position and velocity actuators. Compilation is paid in a
short warm-up run that is not timed. The literal path is slow: ``--duration`` shortens our
run and its wall time is scaled to ``--seconds`` (the JSON says so).

MuJoCo: an MJCF of the same chain (masses, full inertias at the CMs, pivots, joint axes,
a free joint on the tail, capsules of each body's radius and length along its y axis, a
plane, the model's gravity), RK4 at dt, MuJoCo's own soft contacts with anisotropic
friction from explicit floor-capsule ``<pair>`` elements (mu_along on the capsule axis,
mu_across across it: checked on one capsule, see ``friction_frame_check``). MuJoCo has no
prescribed motion, so the joints follow the gait through PD servos (a position actuator,
kp, and a velocity actuator, kv, per joint, targets q(t) and q_dot(t) set every step),
gains chosen from the joint block of the inverse mass matrix so that the fastest servo
mode has omega dt = ``--servo-omega-dt`` at critical damping (RK4 stays stable). It is
stepped from Python, ``mj_step`` in a loop with the gait evaluated each step: that loop is
part of the cost. Both engines start with the joints at q(0), q_dot(0) and zero momentum.
For context, the same MuJoCo model is also timed with its ``implicitfast`` integrator (one
evaluation per step instead of four; the servos' damping implicit), and the RK4 loop once
more with the targets from a precomputed table (mj_step alone, no gait in Python).

Reported per engine: wall time (best of ``--repeat``), real-time factor, time per step,
the centre of mass's travel and mean speed; ours over MuJoCo's wall time; the servos'
tracking error; machine and versions. The two contact laws differ (our spring-damper with
tanh-regularised Coulomb friction against MuJoCo's soft constraints), so the speeds are
shown side by side, not claimed to agree.

    python bench/locomotion.py [--implementation fast|literal|servos] [--seconds 10]
        [--duration S] [--dt 0.001] [--repeat 3] [--every 10] [--cone pyramidal|elliptic]
        [--servo-omega-dt 1.5] [--output FILE]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import mujoco
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout

from report import emit  # bench/report.py (this folder is on sys.path)

from snake_dynamics.floating import (
    FloatingRun,
    locomotion,
    lying_state,
    momentum_free_base_velocity,
    on_the_ground,
    simulate_prescribed_fast,
)
from snake_dynamics.floating import literal as floating
from snake_dynamics.gaits import Gait, gait_parameters, joint_roles, make_gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import ServoModel
from snake_dynamics.sim import MotionInput, simulate_crawling
from snake_dynamics.sim.mujoco_plant import MjcfOptions, snake_mjcf

FloatArray = NDArray[np.float64]
CONFIG = Path(__file__).resolve().parents[1] / "config" / "snake20.yaml"
Simulator = Callable[..., FloatingRun]


# ------------------------------------------------------------------------------ ours
def pick_simulator(choice: str, gains: dict[str, float], n: int) -> Simulator:
    """The compiled recursive form (``fast``), the literal one (``literal``), or the joints
    under PD servos with MuJoCo's gains, angle and rate references (``servos``:
    :func:`snake_dynamics.sim.crawler.simulate_crawling`, eqs. 240-242)."""
    if choice == "fast":
        return simulate_prescribed_fast
    if choice == "literal":
        return floating.simulate_prescribed
    servo = ServoModel.pd(gains["kp"], gains["kv"], n)

    def servos(
        model: SnakeModel, gait: Gait, t_end: float, dt: float, start: Any, every: int
    ) -> FloatingRun:
        source = MotionInput(gait, np.zeros(n), rates=True)
        return simulate_crawling(model, gait, t_end, dt, servo, every, source=source, start=start)

    return servos


def run_ours(
    model: SnakeModel,
    gait: Gait,
    simulate: Simulator,
    duration: float,
    dt: float,
    every: int,
    repeat: int,
) -> tuple[dict[str, Any], FloatingRun]:
    """Warm up (compile), then the best wall time of ``repeat`` runs of ``duration`` s."""
    start = time.perf_counter()
    simulate(model, gait, 10 * dt, dt, start=lying_state(model), every=1)
    warmup = time.perf_counter() - start
    walls, run = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        run = simulate(model, gait, duration, dt, start=lying_state(model), every=every)
        walls.append(time.perf_counter() - start)
        print(f"ours: {duration:g} s simulated in {walls[-1]:.3f} s", file=sys.stderr, flush=True)
    assert run is not None
    return {"walls_s": walls, "warmup_s": warmup}, run


# ---------------------------------------------------------------------------- MuJoCo
def mjcf(
    model: SnakeModel, kp: float, kv: float, cone: str, dt: float, integrator: str = "RK4"
) -> str:
    """The snake of ``model`` on a plane as MJCF text (the MuJoCo plant's builder,
    :func:`snake_dynamics.sim.mujoco_plant.snake_mjcf`: body frames at the CMs, capsules of
    each body's radius, explicit floor pairs, MuJoCo's default solref/solimp) with a PD
    servo per joint: a position actuator (kp) and a velocity actuator (kv)."""
    joints = range(1, model.n_joints + 1)
    actuators = [f'    <position name="kp_{k}" joint="joint_{k}" kp="{kp!r}"/>' for k in joints]
    actuators += [f'    <velocity name="kv_{k}" joint="joint_{k}" kv="{kv!r}"/>' for k in joints]
    options = MjcfOptions(timestep=dt, integrator=integrator, cone=cone)
    return snake_mjcf(model, options, actuators)


def servo_gains(model: SnakeModel, omega_dt: float, dt: float, cone: str) -> dict[str, float]:
    """kp, kv with the stiffest servo mode at omega = omega_dt / dt, critically damped.

    The servo modes solve M qdd = -K q with K = kp on the joints; their omega^2 are kp times
    the eigenvalues of the joint block of M^-1 (the free base included), largest lambda_max
    at the straight pose (checked along the run by its stability).
    """
    m = mujoco.MjModel.from_xml_string(mjcf(model, 1.0, 0.0, cone, dt))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    lam = float(np.max(np.linalg.eigvalsh(np.linalg.inv(full)[6:, 6:])))
    omega = omega_dt / dt
    kp = omega**2 / lam
    return {"kp": kp, "kv": 2.0 * omega / lam, "lambda_max_per_kg_m2": lam, "omega": omega}


def start_mujoco(model: SnakeModel, gait: Gait, m: mujoco.MjModel, d: mujoco.MjData) -> None:
    """Our start: tail CM at (0, 0, max radius), R_0 = I, joints at q(0), q_dot(0), base
    velocity with zero momentum (MuJoCo's free joint: world linear, local angular)."""
    mujoco.mj_resetData(m, d)
    q0, qd0, _ = gait.evaluate(0.0)
    base = momentum_free_base_velocity(model, np.eye(3), q0, qd0)  # R_0 = I
    d.qpos[:3] = [0.0, 0.0, float(np.max(model.radii))]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    d.qpos[7:] = q0
    d.qvel[:6] = base
    d.qvel[6:] = qd0
    mujoco.mj_forward(m, d)


def run_mujoco(
    model: SnakeModel,
    gait: Gait,
    m: mujoco.MjModel,
    d: mujoco.MjData,
    seconds: float,
    dt: float,
    every: int,
    table: FloatArray | None = None,
) -> tuple[float, FloatArray, FloatArray]:
    """``mj_step`` for ``seconds`` with the servo targets (q, q_dot) at each step's middle:
    from ``gait.evaluate`` in the loop, or from a precomputed ``table`` (steps, 2n).

    Returns:
        The wall time [s], the sample times (every ``every`` steps, t = 0 first) and qpos.
    """
    n = model.n_joints
    steps = round(seconds / dt)
    start_mujoco(model, gait, m, d)
    times, qpos = [0.0], [d.qpos.copy()]
    ctrl = d.ctrl
    evaluate = gait.evaluate
    step = mujoco.mj_step
    start = time.perf_counter()
    for i in range(steps):
        if table is None:
            q, qd, _ = evaluate((i + 0.5) * dt)
            ctrl[:n] = q
            ctrl[n:] = qd
        else:
            ctrl[:] = table[i]
        step(m, d)
        if (i + 1) % every == 0:
            times.append((i + 1) * dt)
            qpos.append(d.qpos.copy())
    wall = time.perf_counter() - start
    bad = [
        w
        for w in ("BADQPOS", "BADQVEL", "BADQACC")
        if d.warning[getattr(mujoco.mjtWarning, f"mjWARN_{w}")].number
    ]
    if bad:
        raise SystemExit(f"MuJoCo's run went unstable ({', '.join(bad)}): lower --servo-omega-dt")
    return wall, np.array(times), np.array(qpos)


def mujoco_samples(m: mujoco.MjModel, qpos: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The whole snake's CM and heading (atan2 of sum_b R_b e2 in the plane) per sample."""
    d = mujoco.MjData(m)
    com, heading = [], []
    for row in qpos:
        d.qpos[:] = row
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        com.append(d.subtree_com[1].copy())
        axis = d.xmat[1:].reshape(-1, 3, 3)[:, :, 1].sum(axis=0)
        heading.append(math.atan2(axis[1], axis[0]))
    return np.array(com), np.array(heading)


def travel(t: FloatArray, com: FloatArray, heading: FloatArray, t1: float) -> dict[str, float]:
    """As floating.locomotion over [0, t1]: CM distance, mean speed, forward speed along
    the mean heading, heading drift."""
    i1 = int(np.argmin(np.abs(t - t1)))
    shift = com[i1, :2] - com[0, :2]
    mean = np.array([np.cos(heading[: i1 + 1]).mean(), np.sin(heading[: i1 + 1]).mean()])
    drift = np.unwrap(heading[: i1 + 1])
    return {
        "duration_s": float(t[i1]),
        "distance_m": float(np.linalg.norm(shift)),
        "mean_speed_m_s": float(np.linalg.norm(shift) / t[i1]),
        "forward_speed_m_s": float(shift @ mean / np.linalg.norm(mean) / t[i1]),
        "heading_drift_rad": float(drift[-1] - drift[0]),
    }


def friction_frame_check(ground_mu: tuple[float, float], cone: str, dt: float) -> dict[str, Any]:
    """One capsule (0.1 kg, L 0.1 m, r 0.02 m) on the plane, yawed by 0.7 rad, pushed at
    0.5 m/s along or across its axis: the contact frame's first tangent against the
    capsule's axis, the tangential over normal contact force while it slides, and the
    deceleration over the first 10 ms (before rolling sets in, across) over g."""
    mu_along, mu_across = ground_mu
    xml = f"""<mujoco>
  <option timestep="{dt!r}" integrator="RK4" cone="{cone}"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" contype="0" conaffinity="0"/>
    <body name="capsule" pos="0 0 0.02" euler="0 0 0.7">
      <freejoint/>
      <inertial pos="0 0 0" mass="0.1" diaginertia="9.33e-5 2e-5 9.33e-5"/>
      <geom name="capsule" type="capsule" size="0.02" fromto="0 -0.05 0 0 0.05 0"
            contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <contact>
    <pair geom1="floor" geom2="capsule" condim="3"
          friction="{float(mu_along)!r} {float(mu_across)!r} 0.005 0.0001 0.0001"/>
  </contact>
</mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    g = float(np.linalg.norm(m.opt.gravity))
    out: dict[str, Any] = {}
    for name, mu in (("along", mu_along), ("across", mu_across)):
        mujoco.mj_resetData(m, d)
        for _ in range(round(0.3 / dt)):  # settle onto its contacts
            mujoco.mj_step(m, d)
        axis = d.xmat[1].reshape(3, 3)[:, 1].copy()
        push = axis if name == "along" else np.cross([0.0, 0.0, 1.0], axis)
        d.qvel[:] = 0.0
        d.qvel[:3] = 0.5 * push
        mujoco.mj_forward(m, d)
        tangents, ratios = [], []
        for c in range(d.ncon):
            frame = d.contact[c].frame.reshape(3, 3)
            tangents.append(abs(float(frame[1] @ axis)))
            force = np.zeros(6)
            mujoco.mj_contactForce(m, d, c, force)
            ratios.append(float(np.linalg.norm(force[1:3]) / force[0]))
        v0 = float(d.qvel[:3] @ push)
        for _ in range(round(0.01 / dt)):
            mujoco.mj_step(m, d)
        decel = (v0 - float(d.qvel[:3] @ push)) / 0.01
        out[name] = {
            "mu": mu,
            "contacts": len(tangents),
            "first_tangent_dot_axis": min(tangents),
            "friction_over_normal": float(np.mean(ratios)),
            "deceleration_over_g_first_10ms": decel / g,
        }
    out["first_tangent_is_axis"] = bool(
        out["along"]["first_tangent_dot_axis"] > 1.0 - 1e-9
        and out["across"]["first_tangent_dot_axis"] > 1.0 - 1e-9
    )
    return out


class Settings(NamedTuple):
    """What every MuJoCo measurement shares."""

    model: SnakeModel
    gait: Gait
    gains: dict[str, float]
    cone: str
    seconds: float
    duration: float
    dt: float
    every: int
    repeat: int


def measure_mujoco(s: Settings, integrator: str, table: FloatArray | None) -> dict[str, Any]:
    """Best-of-``repeat`` wall time of the Python ``mj_step`` loop with ``integrator``, the
    travel and the servos' tracking error; with ``table``, also the loop fed from it."""
    model, gait, gains, dt = s.model, s.gait, s.gains, s.dt
    steps = round(s.seconds / dt)
    m = mujoco.MjModel.from_xml_string(
        mjcf(model, gains["kp"], gains["kv"], s.cone, dt, integrator)
    )
    d = mujoco.MjData(m)
    walls, bare = [], []
    for _ in range(s.repeat):
        wall, t, qpos = run_mujoco(model, gait, m, d, s.seconds, dt, s.every)
        walls.append(wall)
        print(f"mujoco {integrator}: {s.seconds:g} s simulated in {wall:.3f} s", file=sys.stderr)
        if table is not None:
            bare.append(run_mujoco(model, gait, m, d, s.seconds, dt, s.every, table)[0])
    contacts = int(d.ncon)
    com, heading = mujoco_samples(m, qpos)
    error = qpos[:, 7:] - np.array([gait.evaluate(x).q for x in t])
    pitch, yaw = joint_roles(model.axes)
    out: dict[str, Any] = {
        "integrator": integrator,
        "simulated_s": s.seconds,
        **rate(min(walls), s.seconds, steps),
        "all_walls_s": walls,
    }
    if table is not None:
        out["precomputed_targets"] = {
            **rate(min(bare), s.seconds, steps),
            "note": "the same loop with (q, q_dot) targets from a table made beforehand: "
            "mj_step and the ctrl copy alone, no gait evaluation in Python",
        }
    out["travel"] = travel(t, com, heading, s.seconds)
    if s.duration != s.seconds:
        out["travel_over_ours_duration"] = travel(t, com, heading, s.duration)
    out["tracking_error_rad"] = {
        "rms": float(np.sqrt(np.mean(error**2))),
        "max": float(np.max(np.abs(error))),
        "rms_yaw_joints": float(np.sqrt(np.mean(error[:, yaw] ** 2))),
        "rms_pitch_joints": float(np.sqrt(np.mean(error[:, pitch] ** 2))),
    }
    out["contacts_at_end"] = contacts
    ground = model.ground
    assert ground is not None
    out["mjcf"] = {
        "integrator": integrator,
        "cone": s.cone,
        "bodies": model.n_joints + 1,
        "geoms": "capsules, radius r_b, cylinder part L_b along the body's y axis",
        "contact": "explicit <pair geom1='floor' geom2='body_b' condim='3' "
        f"friction='{ground.mu_along} {ground.mu_across} 0.005 0.0001 0.0001'/>, "
        "MuJoCo's default solref/solimp; no other collisions (contype = conaffinity = 0)",
        "actuation": "PD servo per joint: <position kp> with ctrl q(t) and <velocity kv> "
        "with ctrl q_dot(t), targets at each step's middle (held over the step)",
        "kp_N_m_per_rad": gains["kp"],
        "kv_N_m_s_per_rad": gains["kv"],
        "servo_omega_dt": gains["omega"] * dt,
        "lambda_max_of_joint_block_of_inverse_M": gains["lambda_max_per_kg_m2"],
        "nq": int(m.nq),
        "nv": int(m.nv),
        "nu": int(m.nu),
    }
    return out


# ------------------------------------------------------------------------------ main
def rate(wall: float, simulated: float, steps: int) -> dict[str, float]:
    return {
        "wall_s": wall,
        "real_time_factor": simulated / wall,
        "per_step_us": wall / steps * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--implementation", choices=["fast", "literal", "servos"], default="fast")
    parser.add_argument("--seconds", type=float, default=10.0, help="simulated time (10 s)")
    parser.add_argument(
        "--duration", type=float, help="ours only: simulate this long, scale to --seconds"
    )
    parser.add_argument("--dt", type=float, default=1e-3, help="step [s] (1 ms)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--every", type=int, default=10, help="keep every N-th step (10)")
    parser.add_argument("--cone", choices=["pyramidal", "elliptic"], default="pyramidal")
    parser.add_argument(
        "--servo-omega-dt", type=float, default=1.5, help="stiffest servo mode's omega dt"
    )
    parser.add_argument("--output", type=Path, help="also write the JSON here")
    args = parser.parse_args()

    model = on_the_ground(SnakeModel.from_yaml(CONFIG))
    ground = model.ground
    assert ground is not None
    gait = make_gait("serpenoid", model)
    pitch, yaw = joint_roles(model.axes)
    dt, seconds = args.dt, args.seconds
    duration = seconds if args.duration is None else min(args.duration, seconds)
    steps = round(seconds / dt)

    kind = args.implementation
    gains = servo_gains(model, args.servo_omega_dt, dt, args.cone)
    simulate = pick_simulator(kind, gains, model.n_joints)
    print(f"ours: {kind}", file=sys.stderr, flush=True)
    ours_time, run = run_ours(model, gait, simulate, duration, dt, args.every, args.repeat)
    ours_wall = min(ours_time["walls_s"])
    scale = seconds / duration
    moved = locomotion(model, run)
    ours: dict[str, Any] = {
        "implementation": kind,
        "function": f"{simulate.__module__}.{simulate.__qualname__}"
        if kind != "servos"
        else "snake_dynamics.sim.crawler.simulate_crawling",
        "simulated_s": duration,
        "scaled_to_s": seconds if scale != 1.0 else None,
        **rate(ours_wall * scale, seconds, steps),
        "measured_wall_s": ours_wall,
        "all_walls_s": ours_time["walls_s"],
        "warmup_s": ours_time["warmup_s"],
        "travel": {
            "duration_s": float(run.t[-1]),
            "distance_m": moved.distance,
            "mean_speed_m_s": moved.mean_speed,
            "forward_speed_m_s": moved.forward_speed,
            "heading_drift_rad": moved.heading_drift,
            "cost_of_transport": moved.cost_of_transport,
        },
        "tracking": "exact (prescribed joints, eq. 228)"
        if kind != "servos"
        else "PD servos with MuJoCo's kp and kv, angle and rate references (eqs. 240-242)",
    }

    table = np.array([np.concatenate(gait.evaluate((i + 0.5) * dt)[:2]) for i in range(steps)])
    settings = Settings(
        model, gait, gains, args.cone, seconds, duration, dt, args.every, args.repeat
    )
    mj = measure_mujoco(settings, "RK4", table)
    mj_implicit = measure_mujoco(settings, "implicitfast", None)
    mj_implicit["why"] = (
        "for context: MuJoCo's recommended integrator (implicit in the servos' damping, one "
        "evaluation per step instead of RK4's four), same model, gains and loop; its "
        "semi-implicit Euler cannot hold these servo gains at 1 ms"
    )

    notes = [
        "ratio_ours_over_mujoco compares wall times for the same simulated time (< 1: ours "
        "faster); both include their Python step loops, neither includes compilation",
        "the contact laws differ (ours: 3 spring-damper points per body, k = "
        f"{ground.stiffness:g} N/m, c = {ground.damping:g} N s/m, tanh-regularised Coulomb "
        f"v_s = {ground.velocity_scale:g} m/s; MuJoCo: soft constraints, capsule-plane "
        "contacts, its friction cone), and ours follows the gait exactly while MuJoCo's "
        "servos track it: the travels are side by side, not expected to agree",
    ]
    if scale != 1.0:
        notes.append(
            f"ours ({kind}) simulated {duration:g} s and its wall time is scaled by "
            f"{scale:g} to {seconds:g} s (per simulated second, scaled); its travel is over "
            f"{duration:g} s, MuJoCo's over the same span is travel_over_ours_duration"
        )
    if ground.mu_backward is not None:
        notes.append("MuJoCo has no mu_backward: its along coefficient is mu_along both ways")

    try:
        import numba

        numba_version: str | None = numba.__version__
    except ImportError:
        numba_version = None

    emit(
        {
            "benchmark": "20-body snake on the ground, serpenoid, RK4, ours vs MuJoCo",
            "ratio_ours_over_mujoco": ours["wall_s"] / mj["wall_s"],
            "ratio_ours_over_mujoco_implicitfast": ours["wall_s"] / mj_implicit["wall_s"],
            "goal_no_slower_than_mujoco": bool(ours["wall_s"] <= mj["wall_s"]),
            "ours": ours,
            "mujoco": mj,
            "mujoco_implicitfast": mj_implicit,
            "friction_frame_check": friction_frame_check(
                (ground.mu_along, ground.mu_across), args.cone, dt
            ),
            "settings": {
                "config": "config/snake20.yaml",
                "bodies": model.n_joints + 1,
                "joint_axes": "".join(
                    "x" if k in set(pitch) else "z" for k in range(len(model.axes))
                ),
                "gait": {
                    "name": "serpenoid",
                    "drives": f"{len(yaw)} yaw (e3) joints; {len(pitch)} pitch (e1) held at 0",
                    "parameters": {k: v[0] for k, v in gait_parameters("serpenoid").items()},
                },
                "ground": {
                    "stiffness": ground.stiffness,
                    "damping": ground.damping,
                    "mu_along": ground.mu_along,
                    "mu_across": ground.mu_across,
                    "velocity_scale": ground.velocity_scale,
                    "contacts": ground.contacts,
                },
                "gravity": model.gravity.tolist(),
                "seconds": seconds,
                "dt_s": dt,
                "steps": steps,
                "repeat": args.repeat,
                "every": args.every,
                "start": "lying_state: straight along e2, tail CM at z = max radius, joints "
                "at q(0), zero momentum",
            },
            "machine": {
                "platform": platform.platform(),
                "processor": platform.processor() or platform.machine(),
                "cpu_count": os.cpu_count(),
                "python": platform.python_version(),
            },
            "versions": {
                "mujoco": mujoco.__version__,
                "numba": numba_version,
                "numpy": np.__version__,
            },
            "notes": notes,
        },
        args.output,
    )


if __name__ == "__main__":
    main()

"""The emulated robot on MuJoCo: :class:`MujocoPlant`, the plant interface of
:class:`snake_dynamics.sim.plant.Plant` (pulses in, potentiometer voltages and pose readings
out) over a body, floor and joints that are not the MFM model (docs/hardware.md, "A plant
that is not the model").

Each MuJoCo step h (``mujoco.timestep``) every powered servo computes the servo law of
:mod:`snake_dynamics.servo` (eqs. 202-206, the compiled :func:`servo_torque` kernel) from its
pulse targets seen its dead time late and its own shaft's angle and rate, with its stall
torque and no-load speed scaled by the battery's terminal voltage (eq. 250; the current
follows the torques with the motors' electrical time constant); a MuJoCo motor
applies it as ctrl - D qdot, D the servo's damping, so that the integrator takes the damping
implicitly (eq. 255). The gears' Coulomb friction and the rotor's inertia are the servo
hinge's ``frictionloss`` and ``armature``; the bracket and the gears' play are a torque
between horn and body (eq. 252).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import mujoco
import numpy as np
from numpy.typing import NDArray

from snake_dynamics.errors import ModelError
from snake_dynamics.floating import FloatingState
from snake_dynamics.model import SnakeModel
from snake_dynamics.servo import NO_LIMIT, ServoModel
from snake_dynamics.sim.mujoco_plant.effects import (
    battery_array,
    bracket_forces,
    servo_controls,
    spread_servos,
    warm_up,
)
from snake_dynamics.sim.mujoco_plant.mjcf import MjcfOptions, snake_mjcf
from snake_dynamics.sim.mujoco_plant.params import (
    ELECTRICAL_TIME_CONSTANT,
    NO_EFFECTS,
    MujocoParams,
)
from snake_dynamics.sim.plant import Plant, PlantParams, PulseMap
from snake_dynamics.sim.pose_sensor import Pose

FloatArray = NDArray[np.float64]


class MujocoPlant(Plant):
    """The robot's servos, gears, brackets, battery, body and floor on MuJoCo, stepped by the
    emulated MCU's clock (the :class:`Plant` interface; ``params.engine`` is ``mujoco``).

    Args:
        model: the robot config's body (``params.mass_scale`` is applied here; with
            ``params.ground`` it lies on that floor under gravity, else its tail is held in
            zero gravity, as :class:`Plant`'s).
        pulses: each joint's channel and calibration, in joint order.
        params: the plant file (its ``mujoco`` and ``effects``; None: the defaults).
        dt: the plant's step [s] (the pose sensor's grid), a whole number of MuJoCo steps.

    Raises:
        ModelError: pulses or servos for another number of joints; a floor MuJoCo cannot
            build (a backward coefficient of its own).
    """

    def __init__(
        self,
        model: SnakeModel,
        pulses: Sequence[PulseMap],
        params: PlantParams,
        dt: float = 0.001,
    ) -> None:
        self.mujoco = params.mujoco or MujocoParams()
        self.effects = NO_EFFECTS if params.effects is None else params.effects
        ground = params.ground
        if ground is not None and ground.backward != ground.mu_along:
            raise ModelError(
                f"{params.source}: ground.mu_backward: the mujoco engine has one coefficient "
                "along a body both ways; set it to null or to mu_along"
            )
        self._init_common(model, pulses, params, dt)
        effects, mj = self.effects, self.mujoco
        rng = np.random.default_rng(effects.seed)
        #: each joint's servo (the plant file's, spread by ``effects.servo_spread``)
        self.servo: ServoModel = spread_servos(params.servo, effects.servo_spread, rng)
        self.substeps = round(dt / mj.timestep)
        self._h = dt / self.substeps
        options = MjcfOptions(
            timestep=self._h,
            integrator=mj.integrator,
            cone=mj.cone,
            solref=(mj.contact_timeconst, mj.contact_dampratio),
            solimp=mj.contact_impedance,
            rail_radius=mj.rail_radius,
            horns=effects.horns,
            armature=effects.armature,
            frictionloss=effects.frictionloss,
            motors=True,
        )
        # held (no floor in the plant file): a fixed tail, whatever floor the config gives
        held = ground is None
        self.mjcf = snake_mjcf(replace(self.model, ground=None) if held else self.model, options)
        self.mj_model = mujoco.MjModel.from_xml_string(self.mjcf)
        self.mj_data = mujoco.MjData(self.mj_model)
        m, n = self.mj_model, self.model.n_joints
        joint = [m.joint(f"joint_{k}") for k in range(1, n + 1)]
        servo = [m.joint(f"servo_{k}") for k in range(1, n + 1)] if effects.horns else joint
        self._joint_q = np.array([j.qposadr[0] for j in joint], dtype=np.intp)
        self._joint_v = np.array([j.dofadr[0] for j in joint], dtype=np.intp)
        self._servo_q = np.array([j.qposadr[0] for j in servo], dtype=np.intp)
        self._servo_v = np.array([j.dofadr[0] for j in servo], dtype=np.intp)
        self._bodies = np.array([m.body(f"body_{b}").id for b in range(n + 1)], dtype=np.intp)
        self._free = not held
        self._step_count = 0
        self._t0 = 0.0
        self.torque = np.zeros(n)  # the motors' torques of the last step [N m]
        self.shaft_rate = np.zeros(n)  # the shafts' rates the last step's law saw [rad/s]
        self._battery = battery_array(effects.battery)
        self._supply = np.array([0.0, 1.0])  # current [A], V / V_nom
        self._lag = self._h / (ELECTRICAL_TIME_CONSTANT + self._h)
        self._scaled = np.zeros((5, n))
        self._packed = np.zeros((5, n))
        self._damping = np.zeros(n)
        mujoco.mj_forward(m, self.mj_data)
        self._power(self.powered)
        self._start_pose_sensor()

    # ------------------------------------------------------------------ state
    @property
    def time(self) -> float:
        """The plant's time [s]."""
        return self._t0 + self._step_count * self._h

    def _body_joints(
        self, values: FloatArray, servo: NDArray[np.intp], joint: NDArray[np.intp]
    ) -> FloatArray:
        """The bodies' joint coordinates in MuJoCo's qpos or qvel at the servo and joint
        addresses: the horn's plus the bracket's (the joint's alone without horns)."""
        if self.effects.horns:
            return np.asarray(values[servo] + values[joint])
        return np.asarray(values[joint].copy())

    @property
    def q(self) -> FloatArray:
        """The bodies' joint angles [rad], shape (n,): the horn's plus the bracket's."""
        return self._body_joints(self.mj_data.qpos, self._servo_q, self._joint_q)

    @property
    def shaft(self) -> FloatArray:
        """The servos' output shafts [rad], shape (n,): what the pots and the loops see."""
        return np.asarray(self.mj_data.qpos[self._servo_q].copy())

    @property
    def qd(self) -> FloatArray:
        """The bodies' joint rates [rad/s], shape (n,)."""
        return self._body_joints(self.mj_data.qvel, self._servo_v, self._joint_v)

    @property
    def base_state(self) -> FloatingState | None:
        """The tail's pose and velocity on the floor (None: a fixed tail), as the MFM
        plant's: velocities in the tail's frame, joint rates the bodies'."""
        if not self._free:
            return None
        d = self.mj_data
        w, x, y, z = d.qpos[3:7]
        quaternion = np.array([x, y, z, w])
        rotation = d.xmat[self._bodies[0]].reshape(3, 3)
        nu = np.concatenate([rotation.T @ d.qvel[:3], d.qvel[3:6], self.qd])
        return FloatingState(d.qpos[:3].copy(), quaternion, self.q, nu)

    def marker_pose(self) -> Pose:
        """The pose sensor's marker now: its body's CM [m] and orientation (x, y, z, w)."""
        sensor = self.params.pose_sensor
        if not self._free or sensor is None:
            raise ModelError("a pose sensor needs a plant on a ground with pose_sensor:")
        d, body = self.mj_data, self._bodies[sensor.body]
        w, x, y, z = d.xquat[body]
        return d.xpos[body].copy(), np.array([x, y, z, w])

    # ------------------------------------------------------------------ stepping
    def _power(self, powered: NDArray[np.bool_]) -> None:
        """The servos of the powered joints get their law, the others only the gears'
        ``limp_damping``: rows K, D, e_0, T_s, w_0 of the packed servo parameters."""
        packed = self.servo.packed.copy()
        limp = ~powered
        packed[0, limp] = 0.0
        packed[1, limp] = self.params.limp_damping
        packed[2, limp] = 0.0
        packed[3:, limp] = NO_LIMIT
        self._packed = packed
        self._damping = packed[1].copy()
        self.mj_model.actuator_biasprm[:, 2] = -self._damping
        self.powered = powered

    def _run_until(self, t: float) -> None:
        """MuJoCo steps up to the last plant step at or before t [s]."""
        steps = math.floor((t - self._t0) / self._h + 1e-9)
        steps -= steps % self.substeps
        count = steps - self._step_count
        if count <= 0:
            return
        m, d = self.mj_model, self.mj_data
        inputs = self.targets.inputs(self.time + self._h * np.arange(count, dtype=np.float64))
        powered = self.powered.astype(np.float64)
        bracket = self.effects.bracket
        half_play = 0.5 * self.effects.backlash
        for i in range(count):
            servo_controls(
                d.qpos,
                d.qvel,
                self._servo_q,
                self._servo_v,
                inputs[i],
                self._packed,
                self._battery,
                self._supply,
                self._lag,
                self.torque,
                powered,
                self._scaled,
                self.shaft_rate,
                d.ctrl,
            )
            if bracket is not None:
                bracket_forces(
                    d.qpos,
                    d.qvel,
                    self._joint_q,
                    self._joint_v,
                    half_play,
                    bracket.stiffness,
                    bracket.damping,
                    d.qfrc_applied,
                )
            mujoco.mj_step(m, d)
            self.torque[:] = d.actuator_force
        self._step_count = steps
        if not np.all(np.isfinite(d.qpos)):
            raise ModelError(
                f"{self.params.source}: the MuJoCo plant went unstable at t = {self.time:.4f} "
                "s: lower mujoco.timestep or soften the contact (mujoco.contact_timeconst)"
            )

    @property
    def voltage_scale(self) -> float:
        """The battery's terminal voltage over the nominal one at the last step (1: none)."""
        return float(self._supply[1])

    @property
    def current(self) -> float:
        """The servos' total current at the last step [A] (0 without a battery)."""
        return float(self._supply[0])

    def warm_up(self) -> None:
        """Compile the step's kernels (numba's cache), not at the first pulses."""
        warm_up(self.model.n_joints)

"""Whether the robot's servos can follow the gait, asked before ``snake demo`` and ``snake
hardware`` start it (docs/mfm.md eqs. 214, 215; :mod:`snake_dynamics.sim.compensation`).

The gait is the one gait_node will play: ``--gait`` (or config/gaits.yaml's), with
config/gaits.yaml's parameters, those of ``--gaits FILE`` replacing them; the servos and the
body are the robot config's (an identified overlay's servo: section when given one).
"""

from __future__ import annotations

from collections.abc import Mapping

from snake_driver.calibration import servos_of
from snake_dynamics.gaits import PeriodicGait, make_gait
from snake_dynamics.model import SnakeModel
from snake_dynamics.robot import Robot
from snake_dynamics.sim.compensation import (
    SaturationError,
    check_crawl,
    check_feasible,
    fixed_tail_load,
)

from .errors import BringupError
from .gaits_file import read_gaits_file
from .graph import config_file


class InfeasibleGaitError(BringupError):
    """A gait the servos cannot follow, refused before the run (``--force`` runs it)."""


def planned_gait(
    model: SnakeModel, gait: str, overrides: Mapping[str, Mapping[str, float]] | None = None
) -> PeriodicGait:
    """The gait gait_node will play on ``model``: ``gait`` (empty: config/gaits.yaml's) with
    config/gaits.yaml's parameters, ``overrides`` (by gait) replacing some.

    Raises:
        GaitsFileError: config/gaits.yaml cannot be read as gaits.
        GaitError: an unknown gait or parameter out of range.
    """
    config = read_gaits_file(config_file("gaits.yaml"))
    name = gait or config.gait or "serpenoid"
    values = {**config.parameters.get(name, {}), **(overrides or {}).get(name, {})}
    built = make_gait(name, model, **values)
    assert isinstance(built, PeriodicGait)  # every gait of GAITS is one
    return built


def check_robot_config(robot: Robot) -> None:
    """Check the sections of ``robot``'s config that the nodes read at their start (the
    body, read with the robot, ``servo:`` and, where there is one, the driver's ``servos:``),
    so that a typo is one line from ``snake`` (``--dry-run`` too), not a node's traceback
    later.

    Raises:
        ModelError, CalibrationError: one line naming the file, the key and the known keys.
    """
    _ = robot.servo  # parsed here, for its one-line error
    if "servos" in robot.document:
        servos_of(robot)


def check_servos_follow(
    robot: Robot,
    gait: str,
    *,
    force: bool,
    overrides: Mapping[str, Mapping[str, float]] | None = None,
) -> str | None:
    """Check that the servos of ``robot`` can give what one period of the gait asks (eq. 215;
    on a floor eq. 217).

    Args:
        robot: the robot the command read (its body and servo: section).
        gait: gait name; empty for config/gaits.yaml's.
        force: run it anyway: return the reason as a warning instead of raising.
        overrides: gait parameters by gait, replacing config/gaits.yaml's (``--gaits``).

    Returns:
        None if they can (on a floor: no servo on its torque-speed line more than a tenth
        of a period, eq. 217; a robot on wheels is not checked), else with ``force`` the
        one-line warning.

    Raises:
        InfeasibleGaitError: they cannot, without ``force``: the joint, the time, the demand
            and the limit.
        ModelError, GaitError: the robot's servo: section or the gait cannot be used.
    """
    model, path = robot.model, robot.path
    if model.wheels:
        return None  # the wheels, not the servos alone, decide what it follows
    servo = robot.servo
    planned = planned_gait(model, gait, overrides)
    try:
        if model.base == "floating":
            check_crawl(model, planned, servo)
        else:
            check_feasible(planned, fixed_tail_load(model), servo, model.joint_names)
    except SaturationError as exc:
        reason = f"the servos of {path.name} cannot follow it: {exc}"
        if not force:
            raise InfeasibleGaitError(f"{reason} (--force runs it anyway)") from None
        return reason
    return None

"""The emulated robot on MuJoCo, a plant that is not the model: its plant-file keys
(``mujoco:``, ``effects:``), the laws of the effects the model leaves out, the MJCF of a
snake, and :class:`MujocoPlant` (docs/hardware.md, "A plant that is not the model").

MuJoCo is imported only by :class:`MujocoPlant` (on first use of the name): a plant file is
checked without it.
"""

from typing import TYPE_CHECKING, Any

from snake_dynamics.sim.mujoco_plant.effects import (
    bracket_torque,
    servo_controls,
    spread_servos,
    supply_current,
    supply_scale,
    warm_up,
)
from snake_dynamics.sim.mujoco_plant.mjcf import MjcfOptions, snake_mjcf
from snake_dynamics.sim.mujoco_plant.params import (
    NO_EFFECTS,
    Battery,
    Bracket,
    Effects,
    MujocoParams,
    effects_from_dict,
    mujoco_from_dict,
)

if TYPE_CHECKING:
    from snake_dynamics.sim.mujoco_plant.engine import MujocoPlant

__all__ = [
    "NO_EFFECTS",
    "Battery",
    "Bracket",
    "Effects",
    "MjcfOptions",
    "MujocoParams",
    "MujocoPlant",
    "bracket_torque",
    "effects_from_dict",
    "mujoco_from_dict",
    "servo_controls",
    "snake_mjcf",
    "spread_servos",
    "supply_current",
    "supply_scale",
    "warm_up",
]


def __getattr__(name: str) -> Any:
    if name == "MujocoPlant":
        from snake_dynamics.sim.mujoco_plant.engine import MujocoPlant

        return MujocoPlant
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

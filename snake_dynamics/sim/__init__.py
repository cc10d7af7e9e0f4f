"""The simulators behind the nodes and the emulated robot's plant (docs/design.md, "The
dynamics core").

The fixed-tail simulator under its servos (:mod:`.simulator`), the snake crawling on its
ground (:mod:`.crawler`) and rolling on wheels (:mod:`.wheeled`), the plant that stands in
for the servos and the body (:mod:`.plant`, :mod:`.engines`, :mod:`.mujoco_plant`), the
pose sensor's datagrams (:mod:`.pose_sensor`), the gait's compensation (:mod:`.compensation`)
and the identification of servos and floor (:mod:`.identification`,
:mod:`.floor_identification`).

The names below load on first use, each from its module: a node that needs the pose
sensor's datagrams alone does not load the compiled simulators.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from snake_dynamics.sim.compensation import saturated_share
    from snake_dynamics.sim.crawler import (
        CrawlingSimulator,
        crawling_substeps,
        simulate_crawling,
    )
    from snake_dynamics.sim.engines import make_plant
    from snake_dynamics.sim.plant import Plant, PlantParams, PulseMap, load_plant, random_plant
    from snake_dynamics.sim.pose_sensor import (
        Pose,
        PoseDatagramError,
        PoseReading,
        PoseSensor,
        PoseSensorParams,
        decode,
        encode,
    )
    from snake_dynamics.sim.simulator import (
        CommandReference,
        InputSource,
        MotionInput,
        PrescribedInput,
        Simulator,
        stable_substeps,
        warm_up,
    )
    from snake_dynamics.sim.wheeled import WheeledSimulator, simulate_wheeled, wheeled_snake

#: Each public name -> the module of this package that defines it.
_HOMES = {
    "CommandReference": "simulator",
    "CrawlingSimulator": "crawler",
    "InputSource": "simulator",
    "MotionInput": "simulator",
    "Plant": "plant",
    "PlantParams": "plant",
    "Pose": "pose_sensor",
    "PoseDatagramError": "pose_sensor",
    "PoseReading": "pose_sensor",
    "PoseSensor": "pose_sensor",
    "PoseSensorParams": "pose_sensor",
    "PrescribedInput": "simulator",
    "PulseMap": "plant",
    "Simulator": "simulator",
    "WheeledSimulator": "wheeled",
    "crawling_substeps": "crawler",
    "decode": "pose_sensor",
    "encode": "pose_sensor",
    "load_plant": "plant",
    "make_plant": "engines",
    "random_plant": "plant",
    "saturated_share": "compensation",
    "simulate_crawling": "crawler",
    "simulate_wheeled": "wheeled",
    "stable_substeps": "simulator",
    "warm_up": "simulator",
    "wheeled_snake": "wheeled",
}

__all__ = [
    "CommandReference",
    "CrawlingSimulator",
    "InputSource",
    "MotionInput",
    "Plant",
    "PlantParams",
    "Pose",
    "PoseDatagramError",
    "PoseReading",
    "PoseSensor",
    "PoseSensorParams",
    "PrescribedInput",
    "PulseMap",
    "Simulator",
    "WheeledSimulator",
    "crawling_substeps",
    "decode",
    "encode",
    "load_plant",
    "make_plant",
    "random_plant",
    "saturated_share",
    "simulate_crawling",
    "simulate_wheeled",
    "stable_substeps",
    "warm_up",
    "wheeled_snake",
]


def __getattr__(name: str) -> Any:
    """A public name of the package, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)

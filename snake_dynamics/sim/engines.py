"""The plant a plant file asks for, on its engine (``engine:``; docs/hardware.md, "A plant
that is not the model").

Above both engines: :mod:`snake_dynamics.sim.plant` (``mfm``) parses every plant file and
knows nothing of MuJoCo's engine; :mod:`snake_dynamics.sim.mujoco_plant` (``mujoco``)
builds on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from snake_dynamics import flexible
from snake_dynamics.errors import ModelError
from snake_dynamics.model import SnakeModel
from snake_dynamics.sim import crawler, mujoco_plant, simulator, wheeled
from snake_dynamics.sim.plant import Plant, PlantParams, PulseMap


def warm_up() -> None:
    """Compile every engine's and model family's numba kernels now (``make`` does at
    install); later processes load them from numba's cache. The MuJoCo plant's kernels need
    no MuJoCo."""
    simulator.warm_up()
    crawler.warm_up()
    wheeled.warm_up()
    mujoco_plant.warm_up()
    flexible.warm_up()


def make_plant(
    model: SnakeModel, pulses: Sequence[PulseMap], params: PlantParams, dt: float = 0.001
) -> Plant:
    """The plant of ``params.engine``: :class:`Plant` (``mfm``) or
    :class:`snake_dynamics.sim.mujoco_plant.MujocoPlant` (``mujoco``; imports MuJoCo).

    Raises:
        ModelError: as the plant's constructor; ``engine: mujoco`` without MuJoCo installed.
    """
    if params.engine != "mujoco":
        return Plant(model, pulses, params, dt)
    try:
        from snake_dynamics.sim.mujoco_plant import MujocoPlant
    except ImportError as exc:
        raise ModelError(
            f"{params.source}: engine: mujoco needs the mujoco package ({exc}; pip install "
            "-r requirements.txt)"
        ) from None
    return MujocoPlant(model, pulses, params, dt)

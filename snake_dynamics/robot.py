"""A robot, read once: its config file (with its ``base:`` overlays) and what the dynamics
core makes of it, the body (:class:`SnakeModel`, with its ground) and the servo model
(:class:`ServoModel`).

A command or a node reads its robot once, at its entry point, and hands this object down;
nothing below it reads the file again. The driver's channel calibration of the same
document is :func:`snake_driver.calibration.servos_of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from snake_dynamics.ground import Ground
from snake_dynamics.model import SnakeModel, read_robot_yaml
from snake_dynamics.servo import ServoModel


@dataclass(frozen=True)
class Robot:
    """A robot config as read from its file.

    Attributes:
        path: the file it was read from (its overlays resolved relative to it).
        document: its YAML document, overlays merged (:func:`read_robot_yaml`).
        model: the body, from the ``model:`` section (named after the file's stem).
    """

    path: Path
    document: Mapping[str, Any]
    model: SnakeModel

    @classmethod
    def load(cls, path: str | Path) -> Robot:
        """Read a robot config file once.

        Raises:
            ModelError: missing file, bad YAML or an invalid ``model:`` section; the message
                names the file and the field.
        """
        path = Path(path)
        document = read_robot_yaml(path)
        return cls(path, document, SnakeModel.from_document(document, path))

    @cached_property
    def servo(self) -> ServoModel:
        """The ``servo:`` section (none: nominal servos), parsed when first asked for.

        Raises:
            ModelError: an invalid ``servo:`` section, naming the file and the key.
        """
        return ServoModel.from_document(self.document, self.path, self.model.joint_names)

    @property
    def ground(self) -> Ground | None:
        """The floor the robot lies on (``model.ground``), or None."""
        return self.model.ground

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The joints, tail to head."""
        return tuple(self.model.joint_names)

    def section(self, name: str) -> Any:
        """One top-level section of the document (None where it has none)."""
        return self.document.get(name)

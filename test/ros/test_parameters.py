"""Node defaults and the shipped parameter files say the same: config/<node>.yaml (gait_node:
config/gaits.yaml) documents
each node's parameters, so a value there that differs from the node's own default would make
`ros2 run` (no file) and `ros2 launch` (the file) run different robots."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [pytest.mark.ros, pytest.mark.parallel]

ROOT = Path(__file__).resolve().parents[2]
#: The nodes that ship a parameter file, and their classes.
NODES = {
    "gaits": "snake_ros.gait_node:GaitNode",
    "dynamics_node": "snake_ros.dynamics_node:DynamicsNode",
    "driver_node": "snake_driver.driver_node:DriverNode",
}
#: Builds the node (no spinning: nothing is connected) and prints its parameters as JSON.
DECLARED = """
import json, sys, importlib, rclpy
module, cls = sys.argv[1].split(":")
rclpy.init()
node = getattr(importlib.import_module(module), cls)()
names = node.list_parameters([], 0).names
print(json.dumps({p.name: p.value for p in node.get_parameters(names)}))
node.destroy_node()
rclpy.shutdown()
"""


def flat(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested YAML parameters as ROS names them (``serpenoid: {amplitude: ..}`` ->
    ``serpenoid.amplitude``)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("node", sorted(NODES))
def test_parameter_file_values_are_the_node_defaults(node: str) -> None:
    shipped = yaml.safe_load((ROOT / "config" / f"{node}.yaml").read_text())
    values = flat(shipped["/**"]["ros__parameters"])
    out = subprocess.run(
        [sys.executable, "-c", DECLARED, NODES[node]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    declared = json.loads(out.stdout.splitlines()[-1])
    assert set(values) <= set(declared), sorted(set(values) - set(declared))
    differ = {k: (v, declared[k]) for k, v in values.items() if declared[k] != v}
    assert differ == {}, f"config/{node}.yaml (file, node default): {differ}"

"""The comparison report of a recorded bag, offline and without ROS (``snake compare``, and
``snake demo``'s report of its own bag).

Errors a user can cause raise :class:`snake_viz.compare.CompareError` (one line).
"""

from __future__ import annotations

from pathlib import Path

from snake_dynamics.robot import Robot
from snake_ros.paths import robot_config as resolve_robot_config
from snake_viz.bag_series import read_bag, read_poses
from snake_viz.compare import (
    DEFAULT_LAG_SPAN_S,
    DEFAULT_MAX_GAP_S,
    DEFAULT_MAX_LAG_S,
    DEFAULT_WINDOW_S,
    MEASURED_TOPIC,
    ODOM_TOPIC,
    SIM_TOPIC,
    CompareError,
    base_travel,
    compare,
)
from snake_viz.compare_report import Report, ReportSummary, path_section
from snake_viz.path_compare import POSE_TOPIC, pose_series, validated_series


def compare_bag(
    bag_path: Path | str,
    out_dir: Path | str,
    robot_config: Path | str | None = "robot",
    *,
    window: float = DEFAULT_WINDOW_S,
    max_lag: float = DEFAULT_MAX_LAG_S,
    topics: tuple[str, str] = (SIM_TOPIC, MEASURED_TOPIC),
    plots: bool = True,
) -> ReportSummary:
    """The comparison report of a recorded bag, offline (no ROS).

    Args:
        bag_path: rosbag2 folder or ``.mcap`` file with both JointState topics.
        out_dir: the report folder.
        robot_config: robot YAML file or config name, for the joint names and the traces
            (None: joint names from the bag, no traces).
        window: window of the "window" columns, the last ``window`` seconds [s].
        max_lag: largest lag searched [s].
        topics: (simulated, measured) topics.
        plots: write the PNG plots.

    Raises:
        CompareError: see :func:`snake_viz.bag_series.read_bag` and
            :func:`snake_viz.compare.compare`.
        snake_dynamics.ModelError: the robot config cannot be loaded.
    """
    model = None
    robot = None
    config_path = None
    if robot_config is not None:
        config_path = resolve_robot_config(str(robot_config))
        if not config_path.is_file():
            raise CompareError(
                f"robot config {robot_config!r} not found (a YAML file or a name in config/)"
            )
        robot = Robot.load(config_path)  # once: the model and the report's servo model
        model = robot.model
    sim, measured = read_bag(Path(bag_path), model.joint_names if model else None, topics)
    comparison = compare(sim, measured, window, max_lag)
    config = {
        "source": "bag",
        "bag": str(Path(bag_path).resolve()),
        "topics": {"sim": topics[0], "measured": topics[1]},
        "robot_config": str(config_path) if config_path else None,
        "robot": model.name if model else None,
        "max_lag_s": max_lag,
        "lag_span_s": DEFAULT_LAG_SPAN_S,
        "max_gap_s": DEFAULT_MAX_GAP_S,
        "error": "measured - simulated [rad], measured interpolated onto the simulated stamps",
    }
    odometry = read_poses(Path(bag_path), ODOM_TOPIC, "nav_msgs/msg/Odometry")
    measured_poses = read_poses(Path(bag_path), POSE_TOPIC, "geometry_msgs/msg/PoseStamped")
    predicted = None if odometry is None else pose_series(odometry)
    travel = None
    if predicted is not None:
        travel = base_travel(predicted.t, predicted.q[:, :3], predicted.q[:, 3:])
    measured, validator = validated_series(measured_poses or [])
    path = path_section(predicted, None if measured_poses is None else measured, validator.rejected)
    return Report(Path(out_dir), model, plots, robot=robot).write(comparison, config, travel, path)

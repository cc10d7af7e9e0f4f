"""The comparison report of a recorded bag, offline and without ROS (``snake compare``, and
``snake demo``'s report of its own bag).

Errors a user can cause raise :class:`snake_viz.compare.CompareError` (one line).
"""

from __future__ import annotations

from pathlib import Path

from snake_dynamics.robot import Robot
from snake_ros.paths import robot_config as resolve_robot_config
from snake_viz import compare
from snake_viz.bag_series import read_bag, read_deflections, read_poses, read_stamps
from snake_viz.compare_report import (
    Report,
    ReportSummary,
    deflection_section,
    path_section,
    report_config,
)
from snake_viz.path_compare import (
    DEFAULT_MAX_AHEAD_S,
    POSE_TOPIC,
    pose_series,
    validated_series,
)
from snake_viz.timing import (
    COMMAND_TOPIC,
    DEFAULT_MAX_CLOCK_JUMP_S,
    DEFAULT_MAX_COMMAND_JUMP_S,
    judge_timing,
)


def report_robot(robot_config: Path | str) -> Robot:
    """The robot of a comparison report, read once by the command that makes it.

    Args:
        robot_config: robot YAML file or config name.

    Raises:
        CompareError: no such file or config name.
        snake_dynamics.ModelError: the robot config cannot be loaded.
    """
    config_path = resolve_robot_config(str(robot_config))
    if not config_path.is_file():
        raise compare.CompareError(
            f"robot config {robot_config!r} not found (a YAML file or a name in config/)"
        )
    return Robot.load(config_path)


def compare_bag(
    bag_path: Path | str,
    out_dir: Path | str,
    robot: Robot | None,
    *,
    window: float = compare.DEFAULT_WINDOW_S,
    max_lag: float = compare.DEFAULT_MAX_LAG_S,
    topics: tuple[str, str] = (compare.SIM_TOPIC, compare.MEASURED_TOPIC),
    plots: bool = True,
    max_command_jump: float = DEFAULT_MAX_COMMAND_JUMP_S,
    max_clock_jump: float = DEFAULT_MAX_CLOCK_JUMP_S,
    pose_max_ahead: float = DEFAULT_MAX_AHEAD_S,
) -> ReportSummary:
    """The comparison report of a recorded bag, offline (no ROS); a bag with the prediction's
    ``link_deflections`` adds each elastic link's tip deflections (docs/flexible.md).

    Args:
        bag_path: rosbag2 folder or ``.mcap`` file with both JointState topics.
        out_dir: the report folder.
        robot: the robot the command read (:func:`report_robot`), for the joint names, the
            traces and the servo model (None: joint names from the bag, no traces).
        window: window of the "window" columns, the last ``window`` seconds [s].
        max_lag: largest lag searched [s].
        topics: (simulated, measured) topics.
        plots: write the PNG plots.
        max_command_jump: the report is untrusted beyond this jump of the stamps on
            ``/joint_commands`` [s] (:mod:`snake_viz.timing`).
        max_clock_jump: ... and beyond this jump of the measured topic's stamps [s].
        pose_max_ahead: a measured pose stamped further ahead of its arrival in the bag is
            rejected [s]; a bag recorded on a robot's simulated /clock (``snake demo``,
            ``snake hardware --emulate``) needs
            :data:`snake_viz.path_compare.SIM_CLOCK_MAX_AHEAD_S`, as compare_node does live.

    Raises:
        CompareError: see :func:`snake_viz.bag_series.read_bag` and
            :func:`snake_viz.compare.compare`.
    """
    model = None if robot is None else robot.model
    config_path = None if robot is None else robot.path
    sim, measured = read_bag(Path(bag_path), model.joint_names if model else None, topics)
    comparison = compare.compare(sim, measured, window, max_lag)
    config = report_config(
        "bag",
        topics,
        config_path,
        model.name if model else None,
        max_lag,
        compare.DEFAULT_MAX_GAP_S,
        bag=str(Path(bag_path).resolve()),
    )
    commands = read_stamps(Path(bag_path), COMMAND_TOPIC)
    timing = judge_timing(commands, measured.t, max_command_jump, max_clock_jump)
    odometry = read_poses(Path(bag_path), compare.ODOM_TOPIC, "nav_msgs/msg/Odometry")
    measured_poses = read_poses(Path(bag_path), POSE_TOPIC, "geometry_msgs/msg/PoseStamped")
    predicted = None if odometry is None else pose_series(odometry)
    travel = None
    if predicted is not None:
        travel = compare.base_travel(predicted.t, predicted.q[:, :3], predicted.q[:, 3:])
    measured, validator = validated_series(measured_poses or [], max_ahead=pose_max_ahead)
    path = path_section(predicted, None if measured_poses is None else measured, validator.rejected)
    deflections = deflection_section(read_deflections(Path(bag_path), compare.DEFLECTIONS_TOPIC))
    report = Report(Path(out_dir), model, plots, robot=robot)
    return report.write(comparison, config, travel, path, timing, deflections)

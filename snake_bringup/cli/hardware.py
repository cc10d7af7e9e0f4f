"""``snake hardware``: the hardware graph (the one ``hardware.launch.py`` starts) without
``ros2 launch``; with ``--emulate``, against the real firmware in simavr (its authenticated
build with ``--key-file``).

The robot's side (``--role robot`` or ``both``) refuses to start on a ROS domain open to other
hosts unless ``--allow-open-domain`` (docs/safety.md); with ``--role both`` and nothing set
about discovery, the run keeps it on this host (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``).

``--role robot`` runs the driver alone (with ``--emulate``, the emulated robot behind it), on
the robot's computer; ``--role station`` the rest, on the workstation (with ``--emulate`` it
starts no emulator: the robot's side is emulated and its /clock drives the station's nodes).
See docs/two-hosts.md.

Everything the run writes goes to its folder (``-o``, default ``runs/hardware-...``): the
nodes' logs, and with ``--dynamics`` compare_node's report in ``compare/``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from snake_ros.domain import keep_discovery_local, refuse_open_domain
from snake_ros.paths import load_robot

from ..emulator import Emulator, Endpoint
from ..feasibility import check_robot_config, check_servos_follow
from ..graph import ROLES, NodeSpec, hardware_graph
from ..runner import run_folder, run_graph
from .options import (
    auth_key,
    compensate_options,
    emulate_option,
    gaits_note,
    graph_options,
    plant_option,
    played_gait,
    report_warning,
    robot_link_options,
)

if TYPE_CHECKING:
    from .options import Subparsers


def register(sub: Subparsers) -> None:
    """Add ``snake hardware`` to the ``snake`` command."""
    p = sub.add_parser(
        "hardware", help="run the hardware graph (gait -> driver -> robot) without ros2 launch"
    )
    robot_link_options(
        p, "authenticated mode with this key (with --emulate: the firmware built with it)"
    )
    p.add_argument("--dynamics", action="store_true", help="run the MFM prediction beside it")
    p.add_argument(
        "--allow-open-domain",
        action="store_true",
        help="start the driver although ROS discovery reaches other hosts (two hosts, or an "
        "isolated network: docs/safety.md); without it the robot's side refuses to",
    )
    emulate_option(
        p, "drive the real firmware in simavr instead of a robot (--transport picks pty/tcp/udp)"
    )
    p.add_argument(
        "--role",
        choices=ROLES,
        default="both",
        help="the nodes of this host when the graph runs on two: robot (the driver; with "
        "--emulate the emulated robot too), station (the rest; with --emulate it follows the "
        "emulated robot's /clock) or both (default)",
    )
    plant_option(p)
    compensate_options(p)
    graph_options(p, "hardware")
    p.set_defaults(
        run=lambda a: run(
            robot=a.robot,
            transport=a.transport,
            port=a.port,
            host=a.host,
            key=auth_key(a.key_file, a.key),
            key_file=a.key_file,
            allow_open_domain=a.allow_open_domain,
            gait=a.gait or "",
            gaits=a.gaits,
            dynamics=a.dynamics,
            compensate=a.compensate,
            force=a.force,
            emulate=a.emulate,
            role=a.role,
            plant=a.plant,
            rviz=not a.no_rviz,
            use_sim_time=a.use_sim_time,
            duration=a.duration,
            output=a.output,
            quiet=a.quiet,
            dry_run=a.dry_run,
        )
    )


def run(
    *,
    robot: str,
    transport: str,
    port: str,
    host: str,
    key: str,
    gait: str,
    gaits: Path | None,
    dynamics: bool,
    compensate: bool,
    force: bool,
    emulate: bool,
    plant: Path | None,
    role: str = "both",
    rviz: bool,
    use_sim_time: bool,
    duration: float | None,
    output: Path | None,
    quiet: bool,
    dry_run: bool,
    key_file: Path | None = None,
    allow_open_domain: bool = False,
) -> int:
    """Run the hardware graph until ``duration`` [s] (None: Ctrl-C).

    Args:
        robot: robot YAML file or config name.
        transport: serial, udp or tcp: the link to the robot (with ``emulate``: the
            emulated robot's bridge; serial: its pty).
        port: serial device or the bridge's port (ignored with ``emulate``).
        host: the bridge's address (ignored with ``emulate``).
        key: 32 hex digits for authenticated mode, or "" (the emulated firmware's key; the
            driver reads it itself, from ``key_file`` or the environment).
        gait: gait name; empty for the ``gaits`` file's, else the one in config/gaits.yaml.
        gaits: a gait_node parameter file: its gait parameters replace config/gaits.yaml's
            (None: none).
        dynamics: the MFM prediction and compare_node beside the robot.
        compensate: commands pre-shaped for the robot config's servos (docs/mfm.md eq. 213).
        force: run a gait the servos cannot follow (eq. 215) instead of refusing it.
        emulate: start the real firmware in simavr and drive it (``role`` station: start
            nothing, follow the emulated robot's /clock).
        role: this host's nodes: ``robot``, ``station`` or ``both`` (graph.ROLES).
        plant: with ``emulate``, the emulated robot's plant file (None: no plant).
        rviz: include RViz.
        use_sim_time: every node follows /clock.
        output: the run's folder (None: ``runs/hardware-<robot>-<gait>-<time>``).
        quiet: only the logs, not the terminal.
        dry_run: print the commands, start nothing (the emulator neither).
        key_file: the file holding the key, for the driver (None: the environment).
        allow_open_domain: start the driver although discovery reaches other hosts.

    Raises:
        OpenDomainError: the robot's side on a domain open to other hosts, without
            ``allow_open_domain`` (not with ``dry_run``: it starts nothing).
        GaitsFileError: the ``gaits`` file cannot be played.
        InfeasibleGaitError: the servos cannot follow the gait, without ``force``.
    """
    if role != "station" and not allow_open_domain and not dry_run:
        if role == "both":  # the whole graph on this host: it needs no other
            keep_discovery_local(os.environ)
        refuse_open_domain("the robot's driver", "--allow-open-domain")
    gait, parameters = played_gait(gait, gaits)
    the_robot = load_robot(robot)  # once; handed down
    check_robot_config(the_robot)
    warning = check_servos_follow(the_robot, gait, force=force, overrides=parameters)
    if warning:
        report_warning(warning)
    if gaits:
        print(f"{'# ' if dry_run else ''}{gaits_note(gaits, gait, parameters)}")
    out = run_folder(f"hardware-{Path(robot).stem}-{gait or 'default'}", output)

    def graph_on(endpoint: Endpoint) -> tuple[NodeSpec, ...]:
        return hardware_graph(
            the_robot,
            endpoint.transport,
            endpoint.port,
            endpoint.host,
            gait,
            dynamics=dynamics,
            compensate=compensate,
            rviz=rviz,
            use_sim_time=use_sim_time,
            robot_clock=emulate,  # the emulated robot's clock drives the graph
            auth_key_file=str(key_file or ""),
            allow_open_domain=allow_open_domain,
            report_dir=out,
            pose_port=endpoint.pose_port,
            role=role,
            gait_parameters=parameters,
        )

    if not emulate or role == "station":  # the station drives no robot link
        graph = graph_on(Endpoint(transport, port, host))
        return run_graph(graph, output=out, duration=duration, quiet=quiet, dry_run=dry_run)
    bridge = None if transport == "serial" else transport
    if dry_run:  # start nothing, the emulator included: its port is not known yet
        where = "PTY" if bridge is None else "PORT"
        print(f"# the emulated robot is not started (--dry-run); {where} is chosen at its start")
        graph = graph_on(Endpoint(transport, where))
        return run_graph(graph, output=out, duration=duration, quiet=quiet, dry_run=True)
    plant_robot = str(the_robot.path)  # the plant's body: the file the command read
    with Emulator(bridge=bridge, key_hex=key or None, plant=plant, robot=plant_robot) as emulator:
        print(f"emulated robot (the firmware ELF in simavr) on {emulator.endpoint}")
        code = run_graph(
            graph_on(emulator.endpoint),
            output=out,
            duration=duration,
            quiet=quiet,
            outside=emulator.exit_reason,
            on_ready=emulator.graph_ready,
        )
    if plant:
        print(f"plant: {emulator.plant_report or 'no report (it did not end normally)'}")
    return code

"""gait_node parameter files (config/gaits.yaml's schema), read without ROS: the gait to play
and each gait's parameters, checked against :func:`snake_dynamics.gaits.gait_parameters`.

``snake optimize`` writes its best gait as one (``best_gait.yaml``); ``snake sim``, ``snake
hardware`` and ``snake demo`` play one with ``--gaits FILE``::

    /**:                      # or gait_node:, /sim/gait_node:, ...
      ros__parameters:
        gait: sidewinding     # optional
        sidewinding:
          amplitude: 0.6      # [rad]
          frequency: 0.4      # [Hz]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from snake_dynamics.gaits import GAITS, gait_parameters

from .errors import BringupError

#: gait_node's parameters besides ``gait`` and the gaits' sections (config/gaits.yaml): the
#: graphs set or rely on them, so ``--gaits`` files leave them to config/gaits.yaml.
NODE_SETTINGS = (
    "publish_rate",
    "autostart",
    "wait_for_subscribers",
    "compensate",
    "command_delay",
    "ramp_time",
    "transition_time",
)
#: The node key of a file for any node (ROS 2's wildcard).
ANY_NODE = "/**"


class GaitsFileError(BringupError):
    """A gait_node parameter file that cannot be read, or not as gaits: the message is
    ``FILE: key: what is wrong``."""


@dataclass(frozen=True)
class GaitsFile:
    """A gait_node parameter file's gaits.

    Attributes:
        gait: its ``gait:`` (None: it has none).
        parameters: each gait section's parameters by gait, as written (units as in
            ``snake gaits``; a parameter a section leaves out keeps config/gaits.yaml's).
        settings: gait_node's other parameters the file sets (:data:`NODE_SETTINGS`).
    """

    gait: str | None
    parameters: Mapping[str, Mapping[str, float]]
    settings: Mapping[str, Any]


def read_gaits_file(path: Path) -> GaitsFile:
    """Read a gait_node parameter file: one node key (``/**`` or gait_node's name) holding
    ``ros__parameters:``, the gait and gait sections checked against their ranges.

    Raises:
        GaitsFileError: the file cannot be read or parsed, its structure is not gait_node's
            parameters, a key is no gait_node parameter, a gait or parameter is unknown, or
            a value is not a number in the parameter's range.
    """
    params = _node_parameters(path, _load(path))
    parameters = {}
    settings = {}
    for key, value in params.items():
        if key == "gait":
            if not isinstance(value, str) or value not in GAITS:
                _fail(path, key, f"unknown gait {value!r}; choose one of {_choices()}")
        elif key in GAITS:
            parameters[key] = _section(path, key, value)
        elif key in NODE_SETTINGS:
            settings[key] = value
        else:
            known = f"gait, {_choices()}, {', '.join(NODE_SETTINGS)}"
            _fail(path, key, f"no gait_node parameter; it takes {known}")
    gait = params.get("gait")
    return GaitsFile(None if gait is None else str(gait), parameters, settings)


def read_gait_overrides(path: Path) -> GaitsFile:
    """A ``--gaits FILE``: :func:`read_gaits_file`, refusing gait_node's other parameters
    (the graph sets them, or config/gaits.yaml does).

    Raises:
        GaitsFileError: as :func:`read_gaits_file`, or the file sets one of
            :data:`NODE_SETTINGS`.
    """
    gaits = read_gaits_file(path)
    for key in gaits.settings:  # the first one
        _fail(
            path, key, "--gaits sets the gait and its parameters only; set it in config/gaits.yaml"
        )
    return gaits


def _choices() -> str:
    return ", ".join(sorted(GAITS))


def _fail(path: Path, key: str, message: str) -> NoReturn:
    raise GaitsFileError(f"{path}: {key}: {message}")


def _load(path: Path) -> Any:
    """The file's YAML document."""
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise GaitsFileError(f"{path}: cannot read it: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise GaitsFileError(f"{path}: not YAML{where}") from None


def _node_parameters(path: Path, doc: Any) -> Mapping[str, Any]:
    """The ``ros__parameters:`` of the document's one node key (``/**`` or gait_node)."""
    expected = f"expected gait_node's parameters ({ANY_NODE}: ros__parameters: ...)"
    if not isinstance(doc, Mapping) or len(doc) != 1:
        keys = ", ".join(map(str, doc)) if isinstance(doc, Mapping) else type(doc).__name__
        raise GaitsFileError(f"{path}: {expected}, got {keys or 'nothing'}")
    ((node, body),) = doc.items()
    if node != ANY_NODE and str(node).rstrip("/").rpartition("/")[2] != "gait_node":
        _fail(path, str(node), f"not gait_node; {expected}")
    if not isinstance(body, Mapping) or list(body) != ["ros__parameters"]:
        _fail(path, str(node), expected)
    params = body["ros__parameters"]
    if not isinstance(params, Mapping):
        _fail(path, f"{node}: ros__parameters", "expected a mapping of parameters")
    return params


def _section(path: Path, gait: str, values: Any) -> dict[str, float]:
    """A gait's section: every parameter known and a number in its range."""
    if not isinstance(values, Mapping):
        _fail(path, gait, "expected a mapping of the gait's parameters")
    spec = gait_parameters(gait)
    section = {}
    for name, value in values.items():
        key = f"{gait}.{name}"
        if name not in spec:
            _fail(path, key, f"unknown parameter; {gait} takes {', '.join(spec)}")
        _default, low, high, unit = spec[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            _fail(path, key, f"expected a number [{unit}], got {value!r}")
        if not (math.isfinite(value) and low <= value <= high):
            _fail(path, key, f"must be in [{low:g}, {high:g}] {unit}, got {value!r}")
        if unit == "joints" and value != round(value):
            _fail(path, key, f"must be a whole number of joints, got {value!r}")
        section[name] = float(value)
    return section


def gait_node_line(gait: str, parameters: Mapping[str, Mapping[str, float]]) -> str:
    """gait_node's gait (empty: none) and gait parameters, as ``gait=NAME NAME.param=value``
    pairs on one line."""
    values = [f"{g}.{k}={v:g}" for g, section in parameters.items() for k, v in section.items()]
    return " ".join(([f"gait={gait}"] if gait else []) + values)

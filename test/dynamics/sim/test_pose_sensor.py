"""The emulated pose sensor (snake_dynamics.sim.pose_sensor): its sampling grid and latency
exactly, its dropouts and noise against the statistics of the chain and the Gaussian they are
drawn from (tolerances of 5 standard errors), its datagram and its plant-file keys."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from snake_dynamics.errors import ModelError
from snake_dynamics.sim import (
    Pose,
    PoseDatagramError,
    PoseReading,
    PoseSensor,
    PoseSensorParams,
    decode,
    encode,
)

QUIET = {"position_noise": 0.0, "yaw_noise": 0.0, "dropout": 0.0}


def run(
    params: PoseSensorParams, seconds: float, marker: Callable[[], Pose] | None = None
) -> list[tuple[float, PoseReading]]:
    """Step a sensor every emulated millisecond from 0 to ``seconds``; (delivery time,
    reading) of every delivery. The default marker is at (t, 0, 0), unrotated."""
    sensor = PoseSensor(params)
    out = []
    for k in range(round(seconds * 1000) + 1):
        t = k * 0.001
        pose = marker or (lambda t=t: (np.array([t, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0])))
        out += [(t, r) for r in sensor.step(t, pose)]
    return out


def test_samples_on_the_grid_delivered_after_exactly_the_latency() -> None:
    got = run(PoseSensorParams(rate=100.0, latency=0.025, **QUIET), 1.0)
    # samples at 0, 0.01, ..., 0.97 are delivered by t = 1.0 (0.98 would be at 1.005)
    assert [r.frame for _, r in got] == list(range(98))
    for delivered, reading in got:
        assert reading.time == pytest.approx(reading.frame * 0.01, abs=1e-12)
        assert delivered == pytest.approx(reading.time + 0.025, abs=1e-12)
        assert reading.position[0] == reading.time  # the pose when it was taken


def test_a_rate_off_the_millisecond_grid_samples_at_the_next_step() -> None:
    got = run(PoseSensorParams(rate=30.0, latency=0.0, **QUIET), 2.0)
    assert [r.frame for _, r in got] == list(range(61))  # 0 .. 2 s at 30 Hz
    lateness = np.array([r.time - r.frame / 30.0 for _, r in got])
    assert np.all(lateness >= -1e-12) and np.all(lateness < 0.001)


def test_dropouts_lose_the_share_in_bursts_of_the_mean_length() -> None:
    params = PoseSensorParams(rate=1000.0, latency=0.0, dropout=0.1, dropout_burst=4.0, seed=5)
    got = run(params, 20.0)
    frames = np.array([r.frame for _, r in got])
    n = 20001
    lost = n - frames.size
    # the two-state chain: stationary share d, second eigenvalue lam = 1 - p_enter - 1/L;
    # Var(count) = n d (1 - d) (1 + lam) / (1 - lam)
    d, lam = params.dropout, 1.0 - params.enter_dropout - 1.0 / params.dropout_burst
    sd = math.sqrt(n * d * (1 - d) * (1 + lam) / (1 - lam))
    assert abs(lost - n * d) < 5 * sd, (lost, n * d, sd)
    gaps = np.diff(np.concatenate([[-1], frames, [n]])) - 1
    bursts = gaps[gaps > 0]
    assert bursts.sum() == lost
    # burst lengths: geometric with mean L, variance L (L - 1)
    big_l = params.dropout_burst
    assert abs(bursts.mean() - big_l) < 5 * math.sqrt(big_l * (big_l - 1) / bursts.size)


def test_independent_dropouts_when_the_burst_is_one_over_one_minus_the_share() -> None:
    """With L = 1 / (1 - d) the chain forgets: P(lost | lost before) = P(lost | seen)."""
    params = PoseSensorParams(rate=1000.0, latency=0.0, dropout=0.2, dropout_burst=1.25)
    assert params.stay_dropped == pytest.approx(params.enter_dropout) == pytest.approx(0.2)


def test_noise_has_the_configured_rms_and_turns_only_about_the_vertical() -> None:
    tilt = Rotation.from_euler("zyx", [0.3, 0.2, -0.4])
    where = np.array([0.5, -0.2, 0.03])
    params = PoseSensorParams(rate=1000.0, latency=0.0, position_noise=0.002, yaw_noise=0.01)
    got = run(params, 4.0, marker=lambda: (where, tilt.as_quat()))
    n = len(got)
    errors = np.array([r.position - where for _, r in got])
    turns = np.array([(Rotation.from_quat(r.quaternion) * tilt.inv()).as_rotvec() for _, r in got])
    # the RMS of n Gaussian draws has a relative standard error of 1 / sqrt(2 n)
    tol = 5.0 / math.sqrt(2 * n)
    assert np.sqrt(np.mean(errors**2, axis=0)) == pytest.approx(np.full(3, 0.002), rel=tol)
    assert np.abs(turns[:, :2]).max() < 1e-12
    assert np.sqrt(np.mean(turns[:, 2] ** 2)) == pytest.approx(0.01, rel=tol)
    assert abs(errors.mean()) < 5 * 0.002 / math.sqrt(3 * n)


def test_the_same_seed_gives_the_same_readings() -> None:
    params = PoseSensorParams(dropout=0.3, dropout_burst=2.0, seed=9)
    a, b = run(params, 1.0), run(params, 1.0)
    c = run(PoseSensorParams(dropout=0.3, dropout_burst=2.0, seed=10), 1.0)
    assert [(t, r.frame, *r.position) for t, r in a] == [(t, r.frame, *r.position) for t, r in b]
    assert [r.frame for _, r in a] != [r.frame for _, r in c]


def test_the_datagram_carries_the_reading_exactly() -> None:
    reading = PoseReading(
        41, 1.234, np.array([0.1, -2.0, 0.03]), Rotation.from_euler("z", 1.0).as_quat()
    )
    back = decode(encode(reading))
    assert back.frame == 41 and back.time == 1.234
    assert np.array_equal(back.position, reading.position)
    assert np.array_equal(back.quaternion, reading.quaternion)
    with pytest.raises(PoseDatagramError, match="not a pose datagram"):
        decode(b"POSE" + bytes(10))
    with pytest.raises(PoseDatagramError, match="not finite"):
        decode(encode(reading._replace(time=math.nan)))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"rates": 100}, r"pose_sensor: unknown keys \['rates'\]"),
        ({"rate": 0}, r"pose_sensor.rate must be a number in \[1, 1000\] Hz, got 0"),
        ({"latency": -0.01}, "pose_sensor.latency must be"),
        ({"position_noise": "1 mm"}, "pose_sensor.position_noise must be"),
        ({"yaw_noise": math.nan}, "pose_sensor.yaw_noise must be"),
        ({"dropout": 1.0}, "pose_sensor.dropout must be"),
        ({"dropout_burst": 0.5}, "pose_sensor.dropout_burst must be"),
        ({"dropout": 0.6}, r"pose_sensor.dropout 0.6 needs dropout_burst >= 1.5"),
        ({"body": 9}, r"pose_sensor.body must be an integer 0..8, got 9"),
        ({"body": True}, "pose_sensor.body must be an integer"),
        ({"seed": -1}, "pose_sensor.seed must be an integer"),
        ([100], "pose_sensor must be a mapping"),
    ],
)
def test_bad_keys_are_named(spec: object, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        PoseSensorParams.from_dict(spec, n_bodies=9)

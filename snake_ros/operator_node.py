"""operator_node: the operator's station: the latched stop state on ``/estop``, as a heartbeat.

The stop state (std_msgs/Bool, true: stop) is published every ``1 / rate`` s, the current
state each time, on ``/estop`` with :data:`snake_ros.common.STOP_QOS` (reliable, transient
local, keep last 1): driver_node, a late joiner or one behind a link that was down, gets the
latest state first and within a period of the link's return, without waiting for the
middleware to repair what was lost. A stop is a state, not an event: it holds until the
operator releases it. Heard again, it is the current state, not an act: after a trip only
the release (``~/enable`` true) re-arms the robot (docs/safety.md, "The e-stop and arming").

Services (``snake estop`` calls them):

``~/estop`` (std_srvs/Trigger)
    The press: the state becomes true, is published at once, and the driver's ``~/estop`` is
    called too (a second path; the answer comes back when it does, and is logged). Answers at
    once.
``~/enable`` (std_srvs/SetBool)
    true, the release: the state becomes false, is published at once, and the driver's
    ``~/enable`` true is called (it also releases an e-stop of the driver's ``~/estop``).
    Refused while the driver has not answered the latest e-stop call (at most
    ``estop_answer_timeout``): that call, repaired late by the middleware, would latch the
    robot again after the release. false: the same as ``~/estop``.

Parameters: ``rate`` (the heartbeat [Hz]), ``stop`` (the state at start: false lets the
driver arm as its ``enable_on_connect`` says), ``driver`` (the driver node whose services are
called), ``estop_answer_timeout`` [s].
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rclpy.client import Client
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.task import Future
from std_msgs.msg import Bool
from std_srvs.srv import SetBool, Trigger

from snake_dynamics.errors import SnakeError

from .common import (
    STOP_QOS,
    STOP_TOPIC,
    declare_bool,
    declare_float,
    declare_string,
    run,
    session,
)


class OperatorNode(Node):
    """The operator's stop state and its heartbeat (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__("operator_node")
        rate = declare_float(
            self,
            "rate",
            10.0,
            1.0,
            50.0,
            "stop state messages per second: a returning link carries the state within one "
            "period [Hz]",
        )
        self.stop = declare_bool(
            self,
            "stop",
            False,
            "the stop state at start (true: the robot stays e-stopped until ~/enable true)",
        )
        driver = declare_string(
            self, "driver", "/driver_node", "the driver node whose ~/estop and ~/enable are called"
        )
        self.answer_timeout = declare_float(
            self,
            "estop_answer_timeout",
            10.0,
            0.5,
            600.0,
            "a release waits for the driver's answer to the e-stop call at most this long [s]",
        )
        self.pub = self.create_publisher(Bool, STOP_TOPIC, STOP_QOS)
        self.driver_estop: Client[Any, Any] = self.create_client(Trigger, f"{driver}/estop")
        self.driver_enable: Client[Any, Any] = self.create_client(SetBool, f"{driver}/enable")
        self._estop_call: tuple[float, Future[Any]] | None = None  # monotonic start, the call
        self.create_service(Trigger, "~/estop", self.on_estop)
        self.create_service(SetBool, "~/enable", self.on_enable)
        self.create_timer(1.0 / rate, self.publish)
        self.publish()
        self.get_logger().info(
            f"stop state {'true (stop)' if self.stop else 'false (run)'} on {STOP_TOPIC} at "
            f"{rate:g} Hz"
        )

    def publish(self) -> None:
        """The stop state, again (the heartbeat)."""
        self.pub.publish(Bool(data=self.stop))

    def press(self) -> str:
        """Latch the stop: publish it now and call the driver's ``~/estop``."""
        self.stop = True
        self.publish()
        ready = self.driver_estop.service_is_ready()
        future = self.driver_estop.call_async(Trigger.Request())
        # a call to a driver not discovered goes nowhere (the request is volatile): no
        # answer to wait for before a release
        self._estop_call = (time.monotonic(), future) if ready else None
        future.add_done_callback(self._estop_answered)
        called = "the driver's ~/estop called" if ready else "the driver's ~/estop not seen"
        self.get_logger().warning(f"stop: {STOP_TOPIC} true; {called}")
        return f"stop state true on {STOP_TOPIC}; {called}"

    def _estop_answered(self, future: Future[Any]) -> None:
        answer: Any = future.result()
        if answer is not None:
            self.get_logger().info(f"the driver's ~/estop answered: {answer.message}")

    def on_estop(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.message = self.press()
        response.success = True
        return response

    def on_enable(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        if not request.data:
            response.message = self.press()
            response.success = True
            return response
        call = self._estop_call
        if call is not None and not call[1].done():
            waited = time.monotonic() - call[0]
            if waited < self.answer_timeout:
                response.success = False
                response.message = (
                    f"the driver has not answered the e-stop yet ({waited:.1f} s; its link "
                    "down?): release refused, try again"
                )
                return response
            self.get_logger().warning(
                f"the driver's ~/estop unanswered after {waited:.1f} s: released anyway"
            )
        self._estop_call = None
        self.stop = False
        self.publish()
        self.driver_enable.call_async(SetBool.Request(data=True))
        self.get_logger().info(f"release: {STOP_TOPIC} false; the driver's ~/enable true called")
        response.success = True
        response.message = f"stop state false on {STOP_TOPIC}; the driver's ~/enable true called"
        return response


def main() -> None:
    """Entry point of the ``operator_node`` executable."""
    sys.exit(run(OperatorNode, "operator_node"))


class OperatorCallError(SnakeError):
    """The operator's station cannot be reached or refused the call."""


def call_operator(press: bool, operator: str = "/operator_node", timeout: float = 10.0) -> str:
    """Press (``press``) or release the operator's stop state from another process: call
    ``operator``'s ``~/estop`` or ``~/enable`` true; returns its answer.

    Raises:
        OperatorCallError: no such node answered within ``timeout`` [s], or it refused.
    """
    with session([]) as _stop:
        node = Node("snake_estop")
        try:
            if press:
                client: Client[Any, Any] = node.create_client(Trigger, f"{operator}/estop")
                request: Any = Trigger.Request()
            else:
                client = node.create_client(SetBool, f"{operator}/enable")
                request = SetBool.Request(data=True)
            if not client.wait_for_service(timeout_sec=timeout):
                raise OperatorCallError(
                    f"no {operator} answered within {timeout:g} s: start the station's graph "
                    "(snake hardware --role station or both), same ROS_DOMAIN_ID"
                )
            future = client.call_async(request)
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            executor.spin_until_future_complete(future, timeout_sec=timeout)
            answer: Any = future.result() if future.done() else None
            if answer is None:
                raise OperatorCallError(f"{operator} did not answer within {timeout:g} s")
            if not answer.success:
                raise OperatorCallError(f"{operator}: {answer.message}")
            return str(answer.message)
        finally:
            node.destroy_node()

"""Servo driver for mfm_snake: wire protocol (no ROS), transports and the driver node."""

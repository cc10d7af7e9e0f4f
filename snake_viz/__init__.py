"""Visualisation and comparison for mfm_snake: plots and reports (no ROS in the maths)."""

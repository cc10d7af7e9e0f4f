"""Bringup of mfm_snake: the `snake` command line (and, later, the shared node graph)."""

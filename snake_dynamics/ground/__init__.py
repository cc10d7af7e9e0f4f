"""The floor: its model, its wrenches, and the compiled contact kernel (docs/mfm.md, "The
snake on the ground", eqs. 231-237).

The plane z = 0 and its friction parameters with the largest RK4 step they allow
(:mod:`.model`), the contact and friction wrenches in numpy (:mod:`.wrenches`), and their
compiled twin with the packing the kernels take (:mod:`.kernel`, imported by itself: this
face stays free of numba, so that the robot description that holds a :class:`Ground`
loads no compiler). A new floor model is a room beside these.
"""

from snake_dynamics.ground.model import VERTICAL_TOL, Ground, stable_step
from snake_dynamics.ground.wrenches import contact_points, ground_wrenches

__all__ = ["VERTICAL_TOL", "Ground", "contact_points", "ground_wrenches", "stable_step"]

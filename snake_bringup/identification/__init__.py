"""Identification of the servo model on the robot (emulated or real), ``snake identify``'s
work, one concern a module:

- :mod:`.experiment`: the robot's part: the driver's link to it (the emulated robot started
  here, or the real one) and each phase played on it at the driver's command rate.
- :mod:`.recording`: the phases as bags (commands, the servos' commanded angles, the measured
  angles), and the recordings the fit reads back from them.
- :mod:`.report`: the fitted servo as a robot config overlay, the Markdown report and
  ``fit.json``.
- :mod:`.plots`: the experiment's steps and the validation gait, measured and predicted.
- :mod:`.commands`: the whole workflow, :func:`.commands.identify`: experiment and
  validation (or an earlier run's bags), fit, overlay, report and plots.

The fit itself is :func:`snake_dynamics.sim.identification.fit_servo`. Errors a user can cause
raise :class:`.experiment.IdentifyError` or
:class:`snake_dynamics.errors.IdentificationError`.
"""

"""The experiment protocol every reproduction uses (``nemot runs``, ``nemot <paper> run``):
``protocol`` (configs, overrides, variants, seeds, running, epoch selection), ``config``
(typed tables of settings), ``report`` (statistics, report, figure), ``cli`` (``nemot
runs``) and ``nemot_runs`` (NeMoT's own run configs, ``reproduction = "nemot"``).
See docs/runs.md."""

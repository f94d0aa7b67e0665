"""The report model: what analysis computed, as frozen values, for renderers to lay out.

Every number a user can see is computed once, in analysis, and carried here; render/
only formats these values. One module per kind of report:

  compare      a baseline against candidates, row by row (and the profile rows beside it)
  outcomes     a change's confidence interval and a reference tool's rule outcome
  profile      profile rows (a comparison's, one run's profile)
  history      series in commit order, their change points, the list of changes
  bisect       a bisection's steps and result
  verdict      `perflab verdict A B`: is run B like the known-good run A?
  calibration  `perflab calibrate`: each point's run-to-run spread beside its sample noise
  live         what the live view of a sampling run shows so far
"""

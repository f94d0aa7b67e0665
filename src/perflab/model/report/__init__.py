"""The report model: what analysis computed, as frozen values, for renderers to lay out.

Every number a user can see is computed once, in analysis, and carried here; render/
only formats these values. One module per kind of report:

  compare     a baseline against candidates, row by row (and profile deltas beside it)
  history     series in commit order, their change points, the list of changes
  bisect      a bisection's steps and result, and a verdict of one run against another
"""

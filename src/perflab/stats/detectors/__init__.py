"""The change-point detectors, one module each, registered in model/methods.py
(CHANGE_POINT_METHODS): each module's `find(values, params)` takes the finite values of a
series (`points.Values`) and its own parameters type, and returns its ChangePoints.
`stats.changepoints.detect` is the callers' entry: it picks the method, prepares the values
and reads a commit series."""

"""The tests and rules of one comparison row, one module each, registered in
model/methods.py (COMPARE_TESTS): each module's `test(sides)` takes the row's clean values
and settings (`row.Sides`) and returns its p-value, interval, rule result and warnings
(`row.Outcome`). `stats.difference` is the callers' entry: verdicts and FDR control."""

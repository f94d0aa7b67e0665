"""Making runs: ``record.record(store, RunRequest)`` is the one way a run is made.

`run`, `ab`, `calibrate` and a fleet worker call it (bisect, which interleaves two built trees
one pair at a time, stores its runs through ``bisect_record``). ``run_plan`` resolves and
checks the request's plans before the store is touched; ``runner.Runner``, the scheduler,
runs warm-ups and rounds (``plan``) under the stop rule (``ab_rule`` for A/B); the sample
executor (``sample``) spawns and times one sample in its own cgroup (``process``,
``cgroups``) with the run's monitors around it (``monitor_set``, ``monitors/``). Beside
them: the machine's snapshot and its tuning advice (``environment``, ``tuning``, ``probe``),
the hooks around samples, and bisect's builds in clean worktrees (``bisect_runs``).
See docs/design.md, "How a run flows".
"""

"""The fleet: Celery tasks and workers, jobs in the store, and the robot loop (`watch`)."""

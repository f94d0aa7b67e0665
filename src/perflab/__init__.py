"""perflab: a performance lab for Linux systems work."""

__version__ = "0.1.0"

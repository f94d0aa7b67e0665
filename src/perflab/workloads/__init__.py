"""Workloads: what runs in a sample and how its output becomes measurements."""

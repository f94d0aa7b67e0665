"""perflab serve: a read-only dashboard over the store (above analysis, below cli)."""

"""Rendering: text tables, progress, exports."""

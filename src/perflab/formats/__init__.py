"""Foreign files read and written: other tools' result files and series files.

Nothing here imports analysis, store or execute: a file becomes model values (or one
UsageError line), and the layers above decide what to do with them.
"""

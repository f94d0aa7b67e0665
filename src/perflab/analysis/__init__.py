"""Analysis: summaries, comparisons, history, bisect, verdicts."""

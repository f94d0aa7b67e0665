"""JSON text to Python values, every failure one line: shared by the importers and the
series reader (kept apart from the importers' pydantic models, which are slow to import)."""

from __future__ import annotations

import json
from typing import Any

from perflab.model.errors import UsageError


def parse_json(text: str, prefix: str) -> Any:
    """json.loads, with every way it can fail as one UsageError line starting with ``prefix``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{prefix}: not JSON ({error.msg} at line {error.lineno} "
                         f"column {error.colno})") from None
    except RecursionError:
        raise UsageError(f"{prefix}: JSON nested too deeply") from None
    except ValueError as error:  # an integer of more than sys.get_int_max_str_digits() digits
        raise UsageError(f"{prefix}: a number in the file is too long ({str(error).split(';')[0]})") from None

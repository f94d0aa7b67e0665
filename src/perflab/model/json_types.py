"""JSON that perflab keeps as it is read: the one alias for a value of a stored document."""

from __future__ import annotations

from typing import TypeAlias

#: A JSON value, as json.loads returns it. Used only where the content is free JSON whose
#: shape perflab does not fix (a machine's environment, a stored spec before RunRequest reads
#: it, a method's parameters, a rerun round); a reader narrows a value with isinstance before
#: it uses it. Not in a type RunRequest decodes: its forward reference is not resolved there
#: (model.exact_decode, pydantic), so a free part of a RunRequest is dict[str, object].
JsonValue: TypeAlias = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]
#: A JSON object: a stored document, or one part of it.
JsonObject: TypeAlias = dict[str, JsonValue]

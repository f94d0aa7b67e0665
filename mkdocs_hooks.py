"""mkdocs hook: every page under docs/ is in the nav, those mkdocs.yml does not list at the end.

Pages are added by several people at once; a page missing from the nav would be built but
unreachable, which `mkdocs build --strict` does not catch.
"""

from pathlib import Path


def _listed(nav) -> set[str]:
    found: set[str] = set()
    for entry in nav or []:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found |= _listed(value) if isinstance(value, list) else {value}
    return found


def on_config(config):
    listed = _listed(config["nav"])
    docs = Path(config["docs_dir"])
    more = [str(path.relative_to(docs)) for path in sorted(docs.rglob("*.md"))
            if str(path.relative_to(docs)) not in listed]
    if more:
        config["nav"].append({"More": more})
    return config

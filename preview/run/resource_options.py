"""``options.json``: what the engine matches and replaces by, per resource, beside ``resources.json``.

Why a file of its own: ``resources.json`` says what each resource sends (its inputs); the review also
needs what the engine decides with: each resource's URN as the engine forms it, the old URNs it
answers to (``aliases``, resolved as the engine resolves them, ``preview.diff.urns``) and the replacement
options the program set (``replace_on_changes``, ``delete_before_replace``). A preview made by an
older revision has no such file; the review then reconstructs URNs from the parents' names and knows
no aliases or options.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the review reads options.json without loading the program's runtime
    from preview.run.registration import Registration
    from preview.run.runner import ProgramRun

OPTIONS_FILE = "options.json"


def option_rows(registrations: list[Registration]) -> list[dict[str, Any]]:
    """One row per registration, in registration order (the order of ``resources.json``)."""
    return [
        {
            "type": r.type,
            "name": r.name,
            "urn": r.engine_urn,
            "aliases": list(r.aliases),
            "replaceOnChanges": list(r.replace_on_changes),
            "deleteBeforeReplace": r.delete_before_replace,
        }
        for r in registrations
    ]


def option_files(run: ProgramRun) -> dict[str, str]:
    """``{"options.json": ...}`` for the preview folder."""
    return {OPTIONS_FILE: json.dumps(option_rows(run.registrations), indent=2, sort_keys=True) + "\n"}

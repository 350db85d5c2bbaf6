"""What the settings panel shows for each engine: the page's business, kept out of the engine registry.

An engine registered elsewhere (a plugin) gets the plain panel (a model field, no server) until it calls
`register_panel` with hints of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..chat.engines import engine_info
from ..chat.engines.hf_inference import DEFAULT_MODEL, suggested_hf_models
from ..chat.engines.local.model import DEFAULT, suggested_models
from ..config import Settings
from ..i18n import N_, _


@dataclass(frozen=True)
class PanelHints:
    """The fields an engine's settings need, and what they say."""

    uses_model: bool = True  # shows the model field
    uses_server: bool = False  # shows the base URL, the key and fold
    model_hint: str = ""  # what the model field says under it (a marked message, or a model's name as it is)
    key_label: str = N_("API key")
    suggest_models: Callable[[Settings], list[tuple[str, str]]] | None = None  # (label, value) for the model field


_HINTS: dict[str, PanelHints] = {}


def register_panel(engine: str, hints: PanelHints) -> None:
    _HINTS[engine] = hints


def panel_hints(engine: str) -> PanelHints:
    """The hints for a registered engine (its name or label), in the visitor's language; the plain panel for one
    without any."""
    hints = _HINTS.get(engine_info(engine).name, PanelHints())
    hint = hints.model_hint  # "" has no message (gettext's "" is the catalogue's header)
    if "{bundled}" in hint:
        hint = _(hint, bundled=DEFAULT.label)
    elif hint:
        hint = _(hint)
    return replace(hints, model_hint=hint, key_label=_(hints.key_label))


register_panel("script", PanelHints(uses_model=False))
register_panel("local", PanelHints(model_hint=N_("blank = bundled {bundled}; or a fine-tuned folder (runs/…), "
                                                 "a model folder, .gguf file or Hub id"), suggest_models=suggested_models))
register_panel("openai", PanelHints(uses_server=True, model_hint="gpt-4o-mini"))
register_panel("hf", PanelHints(uses_server=True, model_hint=DEFAULT_MODEL, key_label=N_("HF token"),
                                suggest_models=suggested_hf_models))

"""Which languages a reply engine can hold a conversation in, and the sentence a visitor reads before the
first message when the chosen model cannot speak the character's language.

The bundled SmolLM2-135M answers 孙悟空's "你是谁？" with a string of Chinese characters without meaning:
a visitor should learn that before writing, not from the reply. An engine says what it speaks through an
optional `languages()` method (the local engine reads a fine-tuned model's manifest, where eval records
what it measured); otherwise the model's name is looked up in a short table of families. A model the
table does not know is given the benefit of the doubt: no warning is better than a wrong one.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

from ..i18n import N_, _

if TYPE_CHECKING:
    from ..roles.role import Role

EN = frozenset({"en"})
ZH_EN = frozenset({"zh", "en"})
LANGUAGE_NAMES = {"en": (N_("English"), "英语"), "zh": (N_("Chinese"), "中文"), "ja": (N_("Japanese"), "日语"),
                  "fr": (N_("French"), "法语"), "de": (N_("German"), "德语"), "es": (N_("Spanish"), "西班牙语"),
                  "it": (N_("Italian"), "意大利语"), "pt": (N_("Portuguese"), "葡萄牙语")}
IN_LANGUAGE_MIN = 0.8  # eval's share of replies in a role's language from which a fine-tuned model speaks it

# Model families by a piece of their name (lower case), first match wins; measured or documented by their makers.
FAMILIES: tuple[tuple[str, frozenset[str]], ...] = (
    ("smollm2", EN),  # 135M-1.7B: English only (the bundled one writes Chinese without meaning)
    ("smollm3", frozenset({"en", "fr", "es", "de", "it", "pt"})),
    ("qwen", ZH_EN),
    ("deepseek", ZH_EN),
    ("glm", ZH_EN),
    ("kimi", ZH_EN),
    ("internlm", ZH_EN),
    ("baichuan", ZH_EN),
    ("yi-", ZH_EN),
    ("tinyllama", EN),
    ("phi-", EN),
)


def family_languages(model: str | None) -> frozenset[str] | None:
    """The languages a model's family speaks, by its name; None when the table does not know it."""
    name = (model or "").lower()
    for piece, languages in FAMILIES:
        if piece in name:
            return languages
    return None


def base_language(code: str | None) -> str:
    """'zh-CN' -> 'zh'; blank -> ''."""
    return re.split(r"[-_]", (code or "").strip().lower())[0]


def _model_label(engine) -> str | None:
    label = getattr(engine, "model_label", None)
    return label() if callable(label) else None


def engine_languages(engine) -> frozenset[str] | None:
    """What an engine can answer in: its own `languages()` if it has one, else its model's family; None:
    any language, or not known."""
    own = getattr(engine, "languages", None)
    return own() if callable(own) else family_languages(_model_label(engine))


def language_name(code: str) -> tuple[str, str]:
    return LANGUAGE_NAMES.get(code, (code, code))


def role_language(role: Role) -> str:
    """The role's language by name, in the visitor's language ("Chinese", "中文"), for sentences about it."""
    return _(language_name(base_language(role.language))[0])


def language_gap(engine, role: Role, offers: str = "") -> str | None:
    """A sentence when the engine cannot speak the role's language (None when it can, or nobody knows):
    which model, which language, and `offers`, what the visitor can choose instead."""
    wanted = base_language(role.language)
    speaks = engine_languages(engine)
    if not wanted or speaks is None or wanted in speaks:
        return None
    label = _model_label(engine)
    # the model's name, without what a loaded local model adds to its label ("(llama.cpp, cpu)")
    model = label.split(" (")[0] if label is not None else getattr(engine, "name", "This engine")
    names = [_(language_name(c)[0]) for c in sorted(speaks, key=lambda c: (c != "en", c))]
    spoken = (", ".join(names[:-1]) + _(" and ") + names[-1]) if len(names) > 1 else (names[0] if names else
                                                                                     _("nothing"))
    said = _("{model} speaks {spoken} only, and {name} speaks {language}: its replies would not make sense.",
             model=model, spoken=spoken, name=role.name, language=_(language_name(wanted)[0]))
    return _("{sentence} {hint}", sentence=said, hint=offers.strip()) if offers.strip() else said


def warn_language(engine, role: Role, local: str = "") -> None:
    """The command line's warning, on stderr before the first message, with what to choose instead: `local`, a
    local model that speaks the role's language (its --model name), first when there is one."""
    offer = _("Use --engine script for {name}'s own lines, or --engine hf with HF_TOKEN set (its suggested models "
              "speak Chinese and English).", name=role.name)
    if local:
        offer = _("Use --model {model} (a local model that speaks {language}). {offer}", model=local, offer=offer,
                  language=role_language(role))
    notice = getattr(engine, "notice", lambda: None)()  # the shipped local model could not be used: why, what stands in
    if notice:
        print(_("warning: {said}", said=notice), file=sys.stderr, flush=True)
    said = language_gap(engine, role, offer)
    if said:
        print(_("warning: {said}", said=said), file=sys.stderr, flush=True)

"""A visitor with no key: what signing in with Hugging Face gives them, the engine they start with, and the
warning, before the first message, that the chosen model cannot speak the character's language.

On a Space whose metadata has `hf_oauth: true`, Gradio keeps the visitor's sign-in in their session cookie and
hands each event their profile and token (gr.OAuthProfile, gr.OAuthToken). The token drives the `hf` engine for
that event only: it is never kept in the page's state, logged, exported or written to disk.
"""

from __future__ import annotations

from typing import NamedTuple

from ..chat.engines import engine_info, engine_names, open_engine
from ..chat.engines.local.model import local_offer
from ..chat.engines.local.packaged import PackagedModel
from ..chat.languages import language_gap, role_language
from ..config import Settings
from ..errors import ChatHaruhiError
from ..i18n import N_, _
from ..roles.role import Role
from .common import EnginePanel

SIGN_IN_URL = "/login/huggingface"
OFFLINE_NOW = N_("**Now:** the offline engine, quoting the book. {sign_in} and a capable model writes the replies, "
                 "in Chinese or English, paid from your own Hugging Face account (its free monthly Inference credits "
                 "first).")


def sign_in_link() -> str:
    """The sign-in link, in the visitor's language."""
    return "[**" + _("Sign in with Hugging Face") + f"**]({SIGN_IN_URL})"


def signed_out_note(settings: Settings, engine: str) -> str:
    """What a signed-out visitor is talking to, and what signing in adds, in one line."""
    if engine == "script" or engine not in engine_names():
        return _(OFFLINE_NOW, sign_in=sign_in_link())
    model = settings.gpu_model if engine == "local" and settings.gpu_model else ""
    label = _(engine_info(engine).label)
    now = _("{engine} ({model}, on this Space's GPU)", engine=label, model=model.split("/")[-1]) if model else label
    return _("**Now:** {engine}. {sign_in} to also choose a hosted model in Settings, paid from your own Hugging Face "
             "account (its free monthly Inference credits first).", engine=now, sign_in=sign_in_link())


def username(profile) -> str:
    """The signed-in visitor's Hub name ('' when signed out)."""
    return str(getattr(profile, "username", "") or "") if profile is not None else ""


def token_of(oauth) -> str:
    """The signed-in visitor's access token ('' when signed out or expired: Gradio then hands None)."""
    return str(getattr(oauth, "token", "") or "") if oauth is not None else ""


def signers() -> list[str]:
    """The engines a signed-in visitor's account pays for."""
    return [n for n in engine_names() if engine_info(n).signs_in]


def engine_for(settings: Settings, profile) -> str:
    """The engine a visitor starts with: the operator's choice when they made one; otherwise, for a visitor
    signed in, the engine their account pays for; otherwise the deployment's default (the offline one)."""
    if settings.engine_chosen or not username(profile) or not signers():
        return settings.default_engine
    return signers()[0]


def sign_in_note(settings: Settings, profile, engine: str = "") -> str:
    """One line beside the sign-in button: what the visitor is talking to and what signing in adds, or who is
    signed in."""
    if not settings.sign_in:
        return ""
    who = username(profile)
    if not who:
        return signed_out_note(settings, engine or settings.default_engine)
    label = _(engine_info(signers()[0]).label) if signers() else "Hugging Face Inference"
    return _("Signed in as **{who}**. {engine} answers with your account's Inference credits; your token stays in "
             "your browser's session and is never stored here.", who=who, engine=label)


def offers(settings: Settings, role: Role, profile, engine: str, local: PackagedModel | None = None) -> str:
    """What a visitor can choose instead of a model that cannot speak the role's language: `local`, a packaged
    local model that can, first when there is one."""
    choices = []
    if local is not None:
        choices.append(_("choose {model} as the local model in Settings (it speaks {language})", model=local.label,
                         language=role_language(role)))
    if engine in signers():
        choices.append(_("choose one of the suggested models in Settings"))
    elif settings.sign_in and not username(profile):
        choices.append(_("sign in with Hugging Face (Settings) for a model that does"))
    elif signers():
        pays = _("your sign-in pays") if username(profile) else _("with an HF token")
        choices.append(_("choose {engine} in Settings ({pays})", engine=_(engine_info(signers()[0]).label),
                         pays=pays))
    offline = _("use the offline engine, which answers with {name}'s own lines", name=role.name)
    text = _("{first}, or {second}.", first=choices[0], second=offline) if choices else _("{only}.", only=offline)
    return text[0].upper() + text[1:]


class LanguageWarning(NamedTuple):
    """A role the panel's model cannot speak: the sentence shown before the first message, and the installed
    local model that speaks the role's language, offered in one click (None when there is none)."""

    role: Role
    text: str
    local: PackagedModel | None


def language_warnings(panel: EnginePanel, roles: list[Role], settings: Settings, profile=None) -> list[LanguageWarning]:
    """For each role the panel's model cannot speak, its warning (none for a role it can speak, or when nobody
    knows); the engine is opened once for all of them."""
    try:
        engine = open_engine(panel.engine, settings, **panel.options())
    except ChatHaruhiError:  # an engine or model the visitor is still typing: sending says what is wrong
        return []
    found = []
    notice = getattr(engine, "notice", lambda: None)()  # the shipped model could not be used: what stands in, why
    for role in roles:
        local = local_offer(engine, role)
        said = language_gap(engine, role, offers(settings, role, profile, panel.engine, local))
        said = " ".join(filter(None, (notice, said)))
        if said:
            found.append(LanguageWarning(role, said, local))
    return found


def local_choice(panel: EnginePanel, role: Role, settings: Settings) -> PackagedModel | None:
    """The packaged local model the page's warning offers in one click, when the panel's local model cannot speak
    the role's language and an installed one can; None otherwise."""
    if panel.engine != "local":
        return None
    try:
        engine = open_engine(panel.engine, settings, **panel.options())
    except ChatHaruhiError:
        return None
    return local_offer(engine, role) if language_gap(engine, role) else None

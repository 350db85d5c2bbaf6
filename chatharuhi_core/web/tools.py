"""The app's tools for agents (MCP) and API clients: list and search characters, chat with one (as a persona, with an
author's note, or by voice), continue its reply or write the player's line, search its classic scenes, speak a line.
Each is a plain typed function with an `Args:` docstring, which Gradio turns into the tool's schema and description. They
answer with the deployment's default engine and the operator's settings; their results carry the engine's label and
the model's name, never a key or token. A failure is a ToolError with the sentence a visitor would read.
"""

from dataclasses import dataclass
from pathlib import Path

from ..chat.lanes import ticket_for
from ..config import Settings
from ..errors import ChatHaruhiError
from ..i18n import LANGUAGES, _, language
from ..roles.sources import open_role
from .picker import picker_entries

MAX_MESSAGE_CHARS = 4000
MAX_SCENES = 20


class ToolError(Exception):
    """A tool's failure, as one sentence (the app turns it into the tool's error result)."""


def _imported(settings: Settings) -> list[str]:
    """Characters added on this server (the cache's role packages)."""
    folder = settings.roles_dir
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (p / "role.json").is_file())


def list_characters(query: str = "", settings: Settings | None = None) -> list[dict]:
    """List the characters you can talk to: the bundled ones, those added on this server, and ChatHaruhi's
    catalogue on the Hugging Face Hub (fetched on first use).

    Args:
        query: words to look for in a character's name, work or id, in any language ("" lists them all).

    Returns:
        JSON: one entry per character, "role" (the id or Hub id to pass to the other tools), "name" (with the work),
        and "source" ("bundled", "added" or "hub").
    """
    words = [w.lower() for w in (query or "").split()]
    added = _imported(settings or Settings.from_env())
    here = language()
    entries = picker_entries(added, here)  # named in the caller's language, found by every language's names
    others = [{e.ref: e.label for e in picker_entries(added, lang)} for lang in LANGUAGES if lang != here]
    found = []
    for entry in entries:
        text = " ".join([entry.ref, entry.label, *(other.get(entry.ref, "") for other in others)]).lower()
        if all(w in text for w in words):
            source = "hub" if entry.online else ("bundled" if entry.group.startswith("Bundled") else "added")
            found.append({"role": entry.ref, "name": entry.label, "source": source})
    return found


def _role(role: str, settings: Settings):
    try:
        return open_role((role or "").strip(), settings)
    except ChatHaruhiError as exc:
        raise ToolError(_("{error} (list_characters gives the ids.)", error=exc)) from None


@dataclass(frozen=True)
class ToolCall:
    """One call of chat_with_character (or continue_story, with no message), as one value: the tool's parameters,
    in its order (page/api.py serves the tool with these as its parameters)."""

    role: str
    message: str
    history: list[dict] | None = None
    user_name: str = ""
    persona: str = ""
    authors_note: str = ""
    note_depth: int = 4


def chat_with_character(request: ToolCall, settings: Settings | None = None) -> dict:
    """Send a message to a character and get its reply, in character, drawn from its own classic scenes.
    Call it again with the same history for another reply to choose from.

    Args:
        role: the character's id or Hub id, as list_characters gives it (e.g. "sherlock", "sunwukong").
        message: what you say to the character, in its language or yours.
        history: the conversation so far, oldest first, as {"role": "user" or "assistant", "content": text}
            messages (a user message followed by the character's reply, repeated); [] or omitted for a new one.
        user_name: who you are in the story (blank: the character's usual partner, e.g. Watson for Holmes).
        persona: who you play, described in a few sentences (at most 728 characters; blank: none).
        authors_note: an instruction the model reads near the end of the prompt on this turn (blank: none).
        note_depth: how many messages from the end the author's note goes (0 to 20; 4 by default).

    Returns:
        JSON: "reply" (the character's line), "scenes" (the classic scenes it drew on, most similar first, each with
        its id and similarity), "engine" and "model" (what answered).
    """
    text = (request.message or "").strip()
    if not text:
        raise ToolError(_("The message is empty: say something to the character."))
    if len(text) > MAX_MESSAGE_CHARS:
        raise ToolError(_("The message is {length} characters long; the most is {most}.", length=len(text),
                          most=MAX_MESSAGE_CHARS))
    out = _run(request, lambda bot: bot.stream(text), settings or Settings.from_env())
    return {k: out[k] for k in ("reply", "scenes", "engine", "model")}


def chat_by_voice(role: str, audio: str, history: list[dict] | None = None, user_name: str = "",
                  speech_language: str = "", settings: Settings | None = None) -> dict:
    """Speak to a character: a recording of what you say is transcribed on this server (offline, Whisper base)
    and the character answers it, in character, as chat_with_character would.

    Args:
        role: the character's id or Hub id, as list_characters gives it (e.g. "sherlock", "sunwukong").
        audio: the recording of your message (WAV, MP3, OGG, WEBM or M4A; at most 60 s). It is deleted once heard.
        history: the conversation so far, as for chat_with_character; [] or omitted for a new one.
        user_name: who you are in the story (blank: the character's usual partner).
        speech_language: "zh" or "en", the language spoken in the recording (blank: English).

    Returns:
        JSON: "transcript" (the words heard, which were sent), "reply" (the character's line), "scenes", "engine" and
        "model", as chat_with_character gives them.
    """
    from ..chat.speech import SpeechError, SpeechUnavailable, transcribe

    settings = settings or Settings.from_env()
    spoken = (speech_language or "en").strip().lower()
    try:
        if spoken not in ("zh", "en"):
            raise ToolError(_('speech_language is "zh" or "en".'))
        _role(role, settings)  # an unknown character is said before the recording is heard
        heard = transcribe(audio, spoken, settings=settings)
    except (SpeechError, SpeechUnavailable) as exc:
        raise ToolError(str(exc)) from None
    finally:
        Path(audio).unlink(missing_ok=True)
    answer = chat_with_character(ToolCall(role, heard.text, history, user_name), settings=settings)
    return {"transcript": heard.text, **answer}


def continue_story(role: str, history: list[dict], whose: str = "character", user_name: str = "",
                   persona: str = "", settings: Settings | None = None) -> dict:
    """Write on for the player: the character's last reply goes on from where it stopped, or the player's next
    line is written for them to edit and send.

    Args:
        role: the character's id or Hub id, as list_characters gives it.
        history: the conversation so far, as for chat_with_character; it must end with the character's reply.
        whose: "character" to continue the character's last reply, "player" to write the player's next line.
        user_name: who you are in the story (blank: the character's usual partner).
        persona: who you play, described in a few sentences (at most 728 characters; blank: none).

    Returns:
        JSON: "text" (for "character", the whole reply as it now reads; for "player", the line written),
        "added" (what was added to the reply; for "player", the line), "engine" and "model".
    """
    if whose not in ("character", "player"):
        raise ToolError(_('whose is "character" (continue its last reply) or "player" (write your next line).'))
    request = ToolCall(role, "", history, user_name, persona)
    start = (lambda bot: bot.continue_reply()) if whose == "character" else (lambda bot: bot.my_line())
    out = _run(request, start, settings or Settings.from_env())
    added = out["reply"] if whose == "character" else out["whole"]
    return {"text": out["whole"], "added": added, "engine": out["engine"], "model": out["model"]}


def _run(request: ToolCall, start, settings: Settings) -> dict:
    """One engine call for a tool, in line behind the page's visitors on an engine that answers one at a time."""
    from ..chat.chatbot import ChatHaruhi
    from ..chat.persona import authors_note
    from ..chat.persona import persona as make_persona
    from ..chat.prompt import Exchange

    found = _role(request.role, settings)
    who = (request.user_name or "").strip() or found.visitor_name
    exchanges = _exchanges(request.history or [], who, Exchange)
    try:
        player = make_persona(who, request.persona) if (request.persona or "").strip() else None
        bot = ChatHaruhi(role=found, engine=settings.default_engine, user_role=who, settings=settings,
                         history=exchanges, persona=player, note=authors_note(request.authors_note, request.note_depth))
        bot.load()
        with ticket_for(bot.engine) as ticket:  # in line behind the page's visitors on a one-at-a-time engine
            for _unused in ticket.waiting():
                pass
            streaming = start(bot)
            reply = "".join(streaming)
    except ChatHaruhiError as exc:
        raise ToolError(str(exc)) from None
    record = streaming.reply
    scenes = record.scenes[: record.packed] if record.packed else record.scenes[:3]
    return {"reply": reply, "whole": record.text, "scenes": [_scene(h) for h in scenes],
            "engine": record.stats.engine, "model": record.stats.model}


def _exchanges(history: list, who: str, exchange) -> list:
    """Earlier messages as exchanges: each user message with the reply after it (a trailing one is dropped)."""
    exchanges, asked = [], None
    for item in history:
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            raise ToolError(_('Each history message is {"role": "user" or "assistant", "content": text}.'))
        content = str(item.get("content") or "")
        if item["role"] == "user":
            asked = content
        elif asked is not None:
            exchanges.append(exchange(who, asked, content))
            asked = None
    return exchanges


def _scene(hit) -> dict:
    return {"id": hit.id, "similarity": round(float(hit.similarity), 3), "text": hit.text}


def search_scenes(role: str, query: str, k: int = 5, settings: Settings | None = None) -> list[dict]:
    """Search a character's classic scenes (the ones its replies draw on) by meaning.

    Args:
        role: the character's id or Hub id, as list_characters gives it.
        query: what the scenes should be about, in any language.
        k: how many scenes to return, most similar first (1 to 20).

    Returns:
        JSON: scenes with "id", "similarity" (cosine, 1 is the same meaning) and "text".
    """
    from ..chat.chatbot import ChatHaruhi

    if not (query or "").strip():
        raise ToolError(_("The query is empty: say what the scenes should be about."))
    settings = settings or Settings.from_env()
    found = _role(role, settings)
    try:
        hits = ChatHaruhi(role=found, engine="script", settings=settings).store.search(query, max(1, min(MAX_SCENES,
                                                                                                      int(k))))
    except ChatHaruhiError as exc:
        raise ToolError(str(exc)) from None
    return [_scene(h) for h in hits]


def speak_line(role: str, text: str, settings: Settings | None = None) -> str:
    """Read a line aloud in the character's voice.

    Args:
        role: the character's id or Hub id, as list_characters gives it.
        text: the line to speak (the character's own words, or anything else).

    Returns:
        The audio file of the spoken line.
    """
    from ..chat.voice import speak

    settings = settings or Settings.from_env()
    found = _role(role, settings)
    speech = speak(found, text or "", settings)
    if speech.path is None:
        raise ToolError(speech.notice or _("No voice could read this line."))
    return str(speech.path)


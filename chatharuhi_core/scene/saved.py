"""A scene saved as JSON Lines and read back exactly; the same family as a saved chat.

Line 1 is a header: format "chatharuhi-scene", version, the visitor's name, the order, and the
cast with each member's talkativeness, mute and presence spans. Each further line is one line of
the transcript: who said it (a role id, or null for the visitor), the text, and for a character
its reply id, the line it answered, prompt, scenes, earlier lines it recalled, engine, rating and
correction. A whispered line names the one character who heard it ("to"). Version 2 added "to" and
"recalled"; version 1 files are read as scenes with no whispers. Version 3 added a character line's
"alternatives" (every text it had; chat/swipes.py).
"""

from __future__ import annotations

import json
import time

from ..chat.swipes import check_alternatives
from ..chat.transcript import FORMAT as CHAT_FORMAT
from ..chat.transcript import prompt_field, rating_field, read_saved, text_field
from ..errors import InputError
from ..i18n import N_, _
from .cast import Member, SceneLine, SceneState
from .order import ORDERS

FORMAT = "chatharuhi-scene"
VERSION = 3


def dump_scene(state) -> str:
    header = {"format": FORMAT, "version": VERSION, "user_role": state.user_role, "order": state.order,
              "allow_self": state.allow_self, "exported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "members": [{"role": m.role_id, "name": m.name, "aliases": list(m.aliases),
                           "talkativeness": m.talkativeness, "muted": m.muted, "spans": m.spans,
                           "mutes": m.mutes}
                          for m in state.members]}
    rows = [header]
    for ln in state.lines:
        rows.append({"speaker": ln.speaker, "role": ln.role_id, "text": ln.text, "id": ln.id, "cue": ln.cue,
                     "engine": ln.engine, "model": ln.model, "rating": ln.rating, "original": ln.original,
                     "prompt": ln.messages, "scenes": ln.scenes, "to": ln.to, "recalled": ln.recalled,
                     **({"alternatives": ln.alternatives} if ln.alternatives else {})})
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def _text(obj: dict, key: str, where: str, required: bool = True) -> str:
    return text_field(obj, key, where, "scene", required)


def _spans(value, where: str) -> list[list[int | None]]:
    ok = (isinstance(value, list) and value
          and all(isinstance(s, list) and len(s) == 2 and isinstance(s[0], int)
                  and (s[1] is None or isinstance(s[1], int)) for s in value))
    if not ok:
        raise InputError(_("{where} of the scene file has malformed 'spans' (expected [[joined, left or null], …]).",
                           where=where))
    return [list(s) for s in value]


def _mutes(value, where: str) -> list[list]:
    ok = isinstance(value, list) and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], int)
                                         and isinstance(x[1], bool) for x in value)
    if not ok:
        raise InputError(_("{where} of the scene file has malformed 'mutes' (expected [[line, true or false], …]).",
                           where=where))
    return [list(x) for x in value]


def load_scene(data: bytes | str):
    """Read a saved scene; any problem is one sentence naming the line."""
    rows = read_saved(data, "scene", FORMAT, VERSION,
                      hints={CHAT_FORMAT: N_("It is a one-to-one chat: import it in the Chat tab.")})
    header = rows[0][1]
    members = []
    for i, m in enumerate(header.get("members") or [], 1):
        where = _("Cast member {n} on line 1", n=i)
        if not isinstance(m, dict):
            raise InputError(_("{where} of the scene file is not a JSON object.", where=where))
        talk = m.get("talkativeness", 0.5)
        if not isinstance(talk, (int, float)) or not 0 <= talk <= 1:
            raise InputError(_("{where} of the scene file has a talkativeness outside 0 to 1.", where=where))
        members.append(Member(_text(m, "role", where), _text(m, "name", where, False) or m["role"],
                              tuple(a for a in m.get("aliases") or [] if isinstance(a, str)), float(talk),
                              bool(m.get("muted")), _spans(m.get("spans", [[0, None]]), where),
                              _mutes(m.get("mutes") or [], where)))
    if not members:
        raise InputError(_("That scene file names no characters (line 1 has no 'members')."))
    ids = {m.role_id for m in members}
    lines = []
    for n, obj in rows[1:]:
        where = _("Line {n}", n=n)
        rid = obj.get("role")
        if rid is not None and rid not in ids:
            raise InputError(_("{where} of the scene file is spoken by '{role}', who is not in its cast.", where=where,
                               role=rid))
        prompt = prompt_field(obj, where, "scene")
        scenes = obj.get("scenes") or []
        if not isinstance(scenes, list) or not all(isinstance(x, dict) for x in scenes):
            raise InputError(_("{where} of the scene file has malformed 'scenes'.", where=where))
        to = obj.get("to")
        if to is not None and to not in ids:
            raise InputError(_("{where} of the scene file is whispered to '{to}', who is not in its cast.", where=where,
                               to=to))
        if rid is not None and to is not None and to != rid:
            raise InputError(_("{where} of the scene file is {role}'s line whispered to {to}; a character's private "
                               "line can only be its answer to a whisper.", where=where, role=rid, to=to))
        recalled = obj.get("recalled") or []
        if not isinstance(recalled, list) or not all(isinstance(x, dict) for x in recalled):
            raise InputError(_("{where} of the scene file has malformed 'recalled'.", where=where))
        lines.append(SceneLine(_text(obj, "speaker", where), _text(obj, "text", where), rid,
                          _text(obj, "id", where, False) or f"imported-{n}", prompt, scenes,
                          _text(obj, "cue", where, False), _text(obj, "engine", where, False),
                          _text(obj, "model", where, False), rating_field(obj), obj.get("original") or None,
                          to, recalled, list(check_alternatives(obj.get("alternatives"), obj["text"], where))))
    order = header.get("order") if header.get("order") in ORDERS else "natural"
    return SceneState(members, lines, _text(header, "user_role", _("Line {n}", n=1), False) or "You", order,
                      bool(header.get("allow_self")))

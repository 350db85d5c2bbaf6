"""The documented API, which is also the MCP server's tools: list characters, chat, search scenes, speak."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable

import gradio as gr
from gradio.data_classes import FileData

from chatharuhi_core.config import Settings
from chatharuhi_core.i18n import _
from chatharuhi_core.web.tools import (
    ToolCall,
    ToolError,
    chat_by_voice,
    chat_with_character,
    continue_story,
    list_characters,
    search_scenes,
    speak_line,
)


def _json(result: object) -> str:
    """JSON, not Python's repr, which is what an MCP client would otherwise read."""
    return json.dumps(result, ensure_ascii=False)


def as_tool(fn: Callable, settings: Settings, serve: Callable = _json, returns: type = str,
            takes: type | None = None) -> Callable:
    """A tool as Gradio serves it: answered with the app's one Settings (never a parameter of the tool), its result
    through `serve` (a file for a spoken line, which MCP gives as its URL), its failure sentence as the error the
    API or MCP client reads; name and docstring its own. Its parameters are `fn`'s, or, when `fn` takes one value
    of a dataclass (`takes`), that dataclass's fields: the edge where an API call becomes that value."""
    shape = takes or fn
    params = [p for p in inspect.signature(shape).parameters.values() if p.name != "settings"]
    hints = (takes.__init__ if takes else fn).__annotations__

    def tool(*args, **kwargs):
        try:
            if takes is not None:
                return serve(fn(takes(*args, **kwargs), settings=settings))
            return serve(fn(*args, settings=settings, **kwargs))
        except ToolError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    tool.__name__ = tool.__qualname__ = fn.__name__
    tool.__doc__ = fn.__doc__
    tool.__signature__ = inspect.Signature(params, return_annotation=returns)
    tool.__annotations__ = {**{p.name: hints[p.name] for p in params if p.name in hints}, "return": returns}
    return tool


def tools(settings: Settings) -> tuple[Callable, ...]:
    """The six tools, each answering with the app's settings."""
    return (as_tool(list_characters, settings), as_tool(chat_with_character, settings, takes=ToolCall),
            by_voice(settings), as_tool(continue_story, settings), as_tool(search_scenes, settings),
            as_tool(speak_line, settings, lambda path: FileData(path=path), FileData))


def by_voice(settings: Settings) -> Callable:
    """chat_by_voice as served: its recording arrives as a file Gradio received (an API client's upload, an MCP
    client's URL or base64 data), never a path on the server a caller names."""
    served = as_tool(chat_by_voice, settings)

    def tool(role: str, audio: FileData, history: list[dict] | None = None, user_name: str = "",
             speech_language: str = ""):
        return served(role, _received(audio), history, user_name, speech_language)

    tool.__name__ = tool.__qualname__ = "chat_by_voice"
    tool.__doc__ = chat_by_voice.__doc__
    tool.__annotations__ = {**served.__annotations__, "audio": FileData}
    return tool


def _received(audio: FileData | dict | None) -> str:
    """The path of a file Gradio received for this call; an error sentence for none, or for a path outside the
    folder Gradio keeps received files in (a caller naming a file already on the server)."""
    from pathlib import Path

    from gradio.utils import get_upload_folder

    path = (audio.get("path") if isinstance(audio, dict) else getattr(audio, "path", None)) or ""
    folder = Path(get_upload_folder()).resolve()
    if not path or not Path(path).resolve().is_relative_to(folder):
        raise gr.Error(_("Send the recording as a file (an upload, or a URL an MCP client gives)."),
                       print_exception=False)
    return path


def wire(demo: gr.Blocks, settings: Settings) -> None:
    """The six tools, documented. The page's own events stay callable (the page and its tests use them) but
    undocumented, so an agent sees six tools with described parameters, not the page's state and sliders."""
    served = tools(settings)
    for tool in served:
        gr.api(tool, api_name=tool.__name__)
    names = {tool.__name__ for tool in served}
    for block_fn in demo.fns.values():
        if block_fn.api_visibility == "public" and block_fn.api_name not in names:
            block_fn.api_visibility = "undocumented"

"""The documented API, which is also the MCP server's tools: list characters, chat, search scenes, speak."""

from __future__ import annotations

import inspect
import json

import gradio as gr
from gradio.data_classes import FileData

from chatharuhi_core.web.tools import (
    ToolError,
    chat_with_character,
    continue_story,
    list_characters,
    search_scenes,
    speak_line,
)


def as_tool(fn, serve=lambda result: json.dumps(result, ensure_ascii=False), returns=str):
    """A tool as Gradio serves it: its result through `serve` (JSON by default: an MCP client would otherwise
    read Python's repr; a file for a spoken line, which MCP gives as its URL), its failure sentence as the
    error the API or MCP client reads; name, parameters and docstring its own."""
    def tool(*args, **kwargs):
        try:
            return serve(fn(*args, **kwargs))
        except ToolError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    tool.__name__ = tool.__qualname__ = fn.__name__
    tool.__doc__ = fn.__doc__
    tool.__signature__ = inspect.signature(fn).replace(return_annotation=returns)
    tool.__annotations__ = {**fn.__annotations__, "return": returns}
    return tool


TOOLS = (as_tool(list_characters), as_tool(chat_with_character), as_tool(continue_story),
         as_tool(search_scenes), as_tool(speak_line, lambda path: FileData(path=path), FileData))


def wire(demo: gr.Blocks) -> None:
    """The five tools, documented. The page's own events stay callable (the page and its tests use them) but
    undocumented, so an agent sees five tools with described parameters, not the page's state and sliders."""
    for tool in TOOLS:
        gr.api(tool, api_name=tool.__name__)
    names = {tool.__name__ for tool in TOOLS}
    for block_fn in demo.fns.values():
        if block_fn.api_visibility == "public" and block_fn.api_name not in names:
            block_fn.api_visibility = "undocumented"

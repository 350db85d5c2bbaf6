"""The engine and its settings, folded under the picker; the engine choice is read from it in one place."""

from __future__ import annotations

from collections.abc import Mapping

import gradio as gr

from chatharuhi_core.chat.engines import default_budgets, engine_info, engine_names
from chatharuhi_core.config import Budgets, Settings
from chatharuhi_core.web.common import EnginePanel, engine_note
from chatharuhi_core.web.panel_hints import panel_hints
from chatharuhi_core.web.signin import token_of

from .language import L


class SettingsPanel:
    """Sign-in, the engine, its model and server, and the prompt budgets. Every event that needs the engine sends
    `fields()` by name (Gradio's inputs_kwargs), its handler takes them as one mapping (`**panel`) and reads it with
    `choice`, so the panel's fields and their order live here only. `settings`: the app's one Settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def render(self) -> SettingsPanel:
        budgets = Budgets()
        engines = [(L(engine_info(n).label), n) for n in engine_names()]
        with gr.Accordion(L("Settings"), open=False, elem_id="settings"):
            # a Space with `hf_oauth: true` (elsewhere Gradio would fake a sign-in). Its words stay English: Gradio
            # compares the button's value with the one it was built with to choose between sign-in and sign-out
            if self.settings.sign_in:
                gr.LoginButton("Sign in with Hugging Face", logout_value="Sign out ({})", size="sm",
                               elem_id="sign-in")
            # a signed-in visitor whose chats this Space keeps (session.start shows it)
            self.forget_me = gr.Button(L("Forget me"), size="sm", variant="stop", visible=False,
                                       elem_id="forget-me")
            self.engine = gr.Dropdown(engines, label=L("Engine"), elem_id="engine")
            self.model = gr.Dropdown([], value="", label=L("Model"), visible=False, allow_custom_value=True,
                                     filterable=True, elem_id="model")
            # the model as last set (picked, typed and left, or drawn for an engine): what events follow, not the
            # field's own `change`, which a typed name sets off at every key
            self.model_set = gr.State("")
            with gr.Group(visible=False) as self.server_box:
                # a start value, "" rather than None: the session's load then leaves it as it was
                self.base_url = gr.Textbox("", label=L("Base URL"), placeholder="https://api.openai.com/v1",
                                           elem_id="base-url")
                self.api_key = gr.Textbox(label=L("API key (this session only, never stored)"), type="password",
                                          elem_id="api-key")
                self.fold = gr.Checkbox(label=L("Fold the prompt: no system message, no two user messages in a "
                                          "row (for servers that reject them)"), elem_id="fold")
            # what the microphone hears: the page's language unless the visitor speaks another
            self.speech_language = gr.Dropdown([(L("The page's language"), ""), ("中文", "zh"), ("English", "en")],
                                               value="", label=L("Speech language"), elem_id="speech-language")
            self.story_tokens = gr.Slider(0, 4000, value=budgets.story_tokens, step=16,
                                          label=L("Classic scenes budget (tokens)"), elem_id="story-tokens")
            self.history_tokens = gr.Slider(0, 4000, value=budgets.history_tokens, step=16,
                                            label=L("History budget (tokens)"), elem_id="history-tokens")
            self.memory_tokens = gr.Slider(0, 2000, value=budgets.memory_tokens, step=16,
                                           label=L("Pinned memories budget (tokens)"), elem_id="memory-tokens")
            self.recall_tokens = gr.Slider(0, 2000, value=budgets.recall_tokens, step=16,
                                           label=L("Recall of earlier messages (tokens; 0: off)"),
                                           elem_id="recall-tokens")
        return self

    def fields(self, key: bool = True) -> dict[str, gr.components.Component]:
        """The panel as events send it (Gradio's inputs_kwargs), keyed by EnginePanel's field names, in the order
        the page's API takes them (without the key: as a browser keeps it)."""
        fields = {"engine": self.engine, "model": self.model, "base_url": self.base_url, "api_key": self.api_key,
                  "story_tokens": self.story_tokens, "history_tokens": self.history_tokens, "fold_prompt": self.fold,
                  "memory_tokens": self.memory_tokens, "recall_tokens": self.recall_tokens}
        if not key:
            del fields["api_key"]
        return fields

    def view(self) -> list:
        """What `change_engine` draws (`note`: the engine's description, which the chat tab shows under the box),
        the model as set last."""
        return [self.note, self.model, self.server_box, self.api_key, self.story_tokens, self.history_tokens,
                self.memory_tokens, self.recall_tokens, self.model_set]

    def changes(self, *others) -> list:
        """The events that mean the engine's settings (and `others`) changed: the model as set (`model_set`), not
        the model field's own `change`."""
        return [x.change for x in (*others, self.engine, self.model_set, self.base_url)]

    def wire(self) -> None:
        """The visitor's pick of an engine (not the visit's start, which sets the kept settings), and the model they
        pick or type (`input`: when they pick one or leave the field)."""
        self.engine.input(self.change_engine, self.engine, self.view(), api_name="change_engine")
        self.model.input(lambda model: model or "", self.model, self.model_set, api_name=False,
                         show_progress="hidden")

    def change_engine(self, engine: str):
        """What `view()` draws for the engine the visitor picked (engine_view)."""
        return engine_view(engine, self.settings)


def choice(panel: Mapping[str, object], signed_in: gr.OAuthToken | None = None) -> EnginePanel:
    """The engine choice from the settings panel's fields as an event sent them (`SettingsPanel.fields()`, by
    name); `signed_in`: the visitor's Hugging Face sign-in, handed in by Gradio (the key of the engine their
    account pays for, for this event only)."""
    return EnginePanel.from_page(panel, token_of(signed_in))


def engine_view(engine: str, settings: Settings, kept: dict | None = None):
    """The settings an engine needs: a model field (its hint, and the models it suggests, such as the
    fine-tuned ones found on disk; free text still goes), a server's URL, key and fold, and the
    prompt budgets sized to the engine; `kept`: the model and budgets this browser kept for it."""
    hints = panel_hints(engine)
    kept = kept or {}
    choices = hints.suggest_models(settings) if hints.suggest_models else []
    model = gr.Dropdown(choices=choices, value=kept.get("model", ""), visible=hints.uses_model, info=hints.model_hint)
    key = gr.Textbox(label=f"{hints.key_label} (this session only, never stored)")
    budgets = default_budgets(engine, settings)
    return (engine_note(engine), model, gr.Group(visible=hints.uses_server), key,
            kept.get("story_tokens", budgets.story_tokens), kept.get("history_tokens", budgets.history_tokens),
            kept.get("memory_tokens", budgets.memory_tokens), kept.get("recall_tokens", budgets.recall_tokens),
            kept.get("model", "") or "")

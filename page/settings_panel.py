"""The engine and its settings, folded under the picker; the engine choice is read from it in one place."""

from __future__ import annotations

from collections.abc import Sequence

import gradio as gr

from chatharuhi_core.chat.engines import default_budgets, engine_info, engine_names
from chatharuhi_core.config import Budgets, Settings
from chatharuhi_core.web.common import EnginePanel, engine_note
from chatharuhi_core.web.panel_hints import panel_hints
from chatharuhi_core.web.signin import token_of


class SettingsPanel:
    """Sign-in, the engine, its model and server, and the prompt budgets. Every event that needs the engine
    takes `inputs()` as its last inputs and reads them with `choice`, so the panel's order lives here only."""

    def render(self) -> SettingsPanel:
        budgets = Budgets()
        engines = [(engine_info(n).label, n) for n in engine_names()]
        with gr.Accordion("Settings · 设置", open=False, elem_id="settings"):
            if Settings.from_env().sign_in:  # a Space with `hf_oauth: true` (elsewhere Gradio would fake a sign-in)
                gr.LoginButton("Sign in with Hugging Face · 登录", logout_value="Sign out ({}) · 退出", size="sm",
                               elem_id="sign-in")
            # a signed-in visitor whose chats this Space keeps (session.start shows it)
            self.forget_me = gr.Button("Forget me · 删除我的数据", size="sm", variant="stop", visible=False,
                                       elem_id="forget-me")
            self.engine = gr.Dropdown(engines, label="Engine · 引擎", elem_id="backend")
            self.model = gr.Dropdown([], value="", label="Model", visible=False, allow_custom_value=True,
                                     filterable=True, elem_id="model")
            with gr.Group(visible=False) as self.server_box:
                self.base_url = gr.Textbox(label="Base URL", placeholder="https://api.openai.com/v1",
                                           elem_id="base-url")
                self.api_key = gr.Textbox(label="API key (this session only, never stored)", type="password",
                                          elem_id="api-key")
                self.fold = gr.Checkbox(label="Fold the prompt: no system message, no two user messages in a "
                                        "row (for servers that reject them)", elem_id="fold")
            self.story_tokens = gr.Slider(0, 4000, value=budgets.story_tokens, step=16,
                                          label="Classic scenes budget (tokens)", elem_id="story-tokens")
            self.history_tokens = gr.Slider(0, 4000, value=budgets.history_tokens, step=16,
                                            label="History budget (tokens)", elem_id="history-tokens")
            self.memory_tokens = gr.Slider(0, 2000, value=budgets.memory_tokens, step=16,
                                           label="Pinned memories budget (tokens) · 记忆", elem_id="memory-tokens")
            self.recall_tokens = gr.Slider(0, 2000, value=budgets.recall_tokens, step=16,
                                           label="Recall of earlier messages (tokens; 0: off) · 回想前文",
                                           elem_id="recall-tokens")
        return self

    def inputs(self, key: bool = True) -> list:
        """The panel as events read it, in EnginePanel's PANEL_FIELDS order (without the key: as a browser
        keeps it)."""
        return [self.engine, self.model, self.base_url, *([self.api_key] if key else []), self.story_tokens,
                self.history_tokens, self.fold, self.memory_tokens, self.recall_tokens]

    def view(self) -> list:
        """What `change_engine` draws (`note`: the engine's description, which the chat tab shows under the box)."""
        return [self.note, self.model, self.server_box, self.api_key, self.story_tokens, self.history_tokens,
                self.memory_tokens, self.recall_tokens]

    def wire(self) -> None:
        """The visitor's pick of an engine (not the visit's start, which sets the kept settings)."""
        self.engine.input(change_engine, self.engine, self.view(), api_name="change_engine")


def choice(values: Sequence[object], signed_in: gr.OAuthToken | None = None, key: bool = True) -> EnginePanel:
    """The engine choice from `SettingsPanel.inputs()`' values; `signed_in`: the visitor's Hugging Face
    sign-in, handed in by Gradio (the key of the engine their account pays for, for this event only)."""
    return EnginePanel.from_page(values, token_of(signed_in), key=key)


def change_engine(engine: str, kept: dict | None = None):
    """The settings an engine needs: a model field (its hint, and the models it suggests, such as the
    fine-tuned ones found on disk; free text still goes), a server's URL, key and fold, and the
    prompt budgets sized to the engine; `kept`: the model and budgets this browser kept for it."""
    hints = panel_hints(engine)
    settings = Settings.from_env()
    kept = kept or {}
    choices = hints.suggest_models(settings) if hints.suggest_models else []
    model = gr.Dropdown(choices=choices, value=kept.get("model", ""), visible=hints.uses_model, info=hints.model_hint)
    key = gr.Textbox(label=f"{hints.key_label} (this session only, never stored)")
    budgets = default_budgets(engine, settings)
    return (engine_note(engine), model, gr.Group(visible=hints.uses_server), key,
            kept.get("story_tokens", budgets.story_tokens), kept.get("history_tokens", budgets.history_tokens),
            kept.get("memory_tokens", budgets.memory_tokens), kept.get("recall_tokens", budgets.recall_tokens))

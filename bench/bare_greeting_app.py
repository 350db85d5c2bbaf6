"""The baseline for the first screen: a bare Gradio Blocks app whose chat shows a greeting, filled by a
load event as app.py fills its own (launched the same way: port from GRADIO_SERVER_PORT, analytics off)."""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

with gr.Blocks(title="bare") as demo:
    chat = gr.Chatbot(elem_id="chat")
    box = gr.Textbox(elem_id="message")
    demo.load(lambda: [{"role": "assistant", "content": "Hello there."}], None, chat)

demo.queue()
demo.launch(server_name="127.0.0.1", server_port=int(os.environ["GRADIO_SERVER_PORT"]))

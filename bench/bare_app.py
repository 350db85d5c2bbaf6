"""The baseline for cold start: a bare Gradio Blocks app with a textbox and a button, launched the
same way app.py is (port from GRADIO_SERVER_PORT, analytics off)."""

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

with gr.Blocks(title="bare") as demo:
    box = gr.Textbox()
    out = gr.Textbox()
    gr.Button("Go").click(lambda s: s, box, out)

demo.queue()
demo.launch(server_name="127.0.0.1", server_port=int(os.environ["GRADIO_SERVER_PORT"]))

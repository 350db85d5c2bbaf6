"""The baseline for the page's time to first token: a bare Gradio app whose one event streams a
direct openai SDK call to the same server with the same messages, and nothing else."""

import json
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
from openai import OpenAI  # noqa: E402

MESSAGES = json.loads(os.environ["BENCH_MESSAGES"])
MODEL = os.environ.get("BENCH_MODEL", "plain")
client = OpenAI(base_url=os.environ["BENCH_BASE_URL"], api_key=os.environ["BENCH_KEY"], max_retries=0)


def send(text: str):
    messages = MESSAGES[:-1] + [{"role": "user", "content": text}]
    reply = ""
    for chunk in client.chat.completions.create(model=MODEL, messages=messages, stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            reply += chunk.choices[0].delta.content
            yield [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]


with gr.Blocks() as demo:
    box = gr.Textbox()
    chat = gr.Chatbot()
    box.submit(send, box, chat, api_name="send")

demo.queue(default_concurrency_limit=32)
demo.launch(server_name="127.0.0.1", server_port=int(os.environ["GRADIO_SERVER_PORT"]))

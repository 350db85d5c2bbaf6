"""■ Stop in the library: a reply halted while it streams is kept as far as it got (the page's Stop button sets the
same event from another thread; tests/browser/test_controls_browser.py presses it)."""

from __future__ import annotations

from chatharuhi_core.chat.chatbot import ChatHaruhi


def test_stop_ends_a_reply_with_what_it_wrote_and_the_next_reply_is_whole(env):
    """■ Stop (issue 66): `halt` set while a reply streams ends it with what it has written, marked cut, and the
    engine's stream is closed; the next reply starts clear."""
    settings, _inbox = env

    class Talking:
        name, closed = "talking", 0

        def __init__(self):
            self.bot = None

        def stream(self, request):
            try:
                for i, word in enumerate("The tide turns at midnight and the lamp must be trimmed before".split()):
                    if i == 4 and self.bot.halt_next:
                        self.bot.halt_next = False
                        self.bot.halt.set()  # as the page's Stop does, from another thread
                    yield word + " "
                yield "then."
            finally:
                Talking.closed += 1

    engine = Talking()
    bot = ChatHaruhi(role_name="sherlock", engine=engine, settings=settings)
    engine.bot, bot.halt_next = bot, True
    cut = bot.answer("When does the tide turn?").text
    assert cut.endswith("…") and "trimmed" not in cut and cut.startswith("The tide turns"), cut
    assert Talking.closed == 1 and bot.history[-1].reply == cut  # kept as far as it got
    assert bot.answer("And then?").text.endswith("then.")  # cleared: the next reply is whole

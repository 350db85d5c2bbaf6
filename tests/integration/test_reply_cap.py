"""A reply cut by the engine's length limit is marked as cut ("…"), what was shown stays, and the page says why
(issue 41)."""


from chatharuhi_core.chat.chatbot import ChatHaruhi, ends_sentence, reply_cap
from chatharuhi_core.chat.engines import open_engine
from chatharuhi_core.web.drawing import stats_line


def test_a_sentence_end_is_recognised():
    assert ends_sentence("Elementary.") and ends_sentence("真的吗？」") and not ends_sentence("and then the")


def test_the_cap_is_the_engines_own(settings):
    assert reply_cap(open_engine("script", settings)) == 0  # it quotes whole lines
    assert reply_cap(open_engine("openai", settings, model="m", base_url="http://127.0.0.1:9/v1", api_key="k",
                                 max_tokens=120)) == 120
    assert reply_cap(open_engine("local", settings, max_tokens=500)) == 160  # the local engine's own is lower


def test_the_local_model_cut_at_its_limit_is_marked_and_says_so(settings):
    engine = open_engine("local", settings, seed=0, temperature=0.0, max_tokens=40)
    bot = ChatHaruhi(role_name="sherlock", engine=engine, settings=settings)
    streaming = bot.stream("Tell me everything about your method, from the beginning, in detail.")
    shown = "".join(streaming)
    said = streaming.reply
    assert shown == said.text  # what was shown is what is kept
    if said.stats.cut_at:  # it wrote up to the limit mid-sentence: marked as cut
        assert said.stats.cut_at == 40 and said.text.endswith("…"), said.text
        assert "length limit (40 tokens)" in stats_line(said.stats)
    else:  # it finished by itself
        assert bot.count_tokens(said.raw) < 40

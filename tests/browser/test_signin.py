"""Sign in with Hugging Face: a visitor's own account pays for generated replies.

The app runs as on a Space with `hf_oauth: true`; the visitors' session cookies are the ones Gradio's OAuth
callback writes (hf_signin.py), and the Inference Providers router is the scripted server on loopback, with
its 402, 429, not-served and expired-token answers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from gradio_client import Client
from support.app import text_of
from support.fake_openai import FakeOpenAI
from support.hf_signin import session_cookie, space_env
from support.loopback import gradio_app

from chatharuhi_core import ChatHaruhi
from chatharuhi_core.config import DEFAULT_HF_MODELS, Settings
from chatharuhi_core.errors import EngineError
from chatharuhi_core.web.common import EnginePanel
from chatharuhi_core.web.signin import engine_for, sign_in_note

TOKENS = {"ada": "hf_oauth_token_of_ada_0123456789", "bo": "hf_oauth_token_of_bo_9876543210",
          "cy": "hf_oauth_token_of_cy_5555555555"}


@pytest.fixture(autouse=True)
def hub_online(monkeypatch):
    """huggingface_hub refuses every URL under HF_HUB_OFFLINE (scripts/test.sh sets it), loopback too."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture(scope="module")
def router():
    with FakeOpenAI() as srv:
        srv.tokens.update(TOKENS.values())
        yield srv


@pytest.fixture(scope="module")
def space_app(router, tmp_path_factory):
    """app.py as a Space with sign-in starts it; yields (url, its log, its home)."""
    home = tmp_path_factory.mktemp("space-home")
    log = tmp_path_factory.mktemp("space-log") / "app.log"
    # the Space's persistent storage, where signed-in visitors' chats are kept (/data on a real Space)
    env = space_env(router.base_url.removesuffix("/v1"), CHATHARUHI_USER_CHATS=str(home / "data" / "users"))
    with gradio_app(None, log=log, home=home, tmp=tmp_path_factory.mktemp("space-tmp"), **env) as (url, _, _):
        yield url, log, home


def visitor(url: str, who: str | None) -> Client:
    headers = {"Cookie": f"session={session_cookie(who, TOKENS[who])}"} if who else None
    return Client(url, verbose=False, headers=headers)


def send(client: Client, text: str, engine: str = "hf", model: str = ""):
    job = client.submit(text, "", engine, model, "", "", 1500, 1200, False, 300, 400, "", "", 4, api_name="/send")
    list(job)
    return job.result()[0]


# ------------------------------------------------------------------ settings and the visitor's engine

def test_sign_in_is_on_only_on_a_space_that_asked_for_it(cache_dir):
    base = {"CHATHARUHI_CACHE": str(cache_dir)}
    assert not Settings.from_env(base).sign_in
    assert not Settings.from_env({**base, "OAUTH_CLIENT_ID": "x"}).sign_in  # a laptop: Gradio would fake one
    space = {**base, "SYSTEM": "spaces", "SPACE_ID": "a/b", "OAUTH_CLIENT_ID": "x"}
    assert Settings.from_env(space).sign_in
    assert Settings.from_env(base).hf_models == DEFAULT_HF_MODELS
    assert Settings.from_env({**base, "CHATHARUHI_HF_MODELS": " a/b , c/d,"}).hf_models == ("a/b", "c/d")


def test_a_signed_in_visitor_starts_on_the_engine_their_account_pays_for(cache_dir):
    from types import SimpleNamespace

    ada = SimpleNamespace(username="ada")
    space = Settings.from_env({"CHATHARUHI_CACHE": str(cache_dir), "SYSTEM": "spaces", "SPACE_ID": "a/b",
                               "OAUTH_CLIENT_ID": "x"})
    assert engine_for(space, ada) == "hf" and engine_for(space, None) == "script"
    owner_paid = space.with_(engine_chosen=True, default_engine="openai")
    assert engine_for(owner_paid, ada) == "openai"  # the owner's choice wins
    assert "Sign in with Hugging Face" in sign_in_note(space, None) and "**ada**" in sign_in_note(space, ada)
    assert sign_in_note(space.with_(sign_in=False), None) == ""
    assert "offline engine" in sign_in_note(space, None, "script")  # what a signed-out visitor is talking to
    zero = space.with_(gpu_model="Qwen/Qwen2.5-7B-Instruct")
    assert "Qwen2.5-7B-Instruct, on this Space's GPU" in sign_in_note(zero, None, "local")


def test_the_sign_in_token_is_the_key_of_the_hf_engine_only():
    hf = EnginePanel("hf", signed_in="hf_secret_1")
    assert hf.options()["api_key"] == "hf_secret_1" and "hf_secret_1" not in repr(hf)
    assert EnginePanel("hf", api_key="typed", signed_in="tok").options()["api_key"] == "typed"
    assert EnginePanel("openai", signed_in="tok").options()["api_key"] is None


@pytest.mark.parametrize("model, token, words", [
    ("fault-402", TOKENS["ada"], r"out of Inference Providers credits \(402\)"),
    ("fault-429", TOKENS["ada"], r"busy or the quota is used up \(429\)"),
    ("fault-not-served", TOKENS["ada"], "No Inference Provider serves fault-not-served"),
    ("echo", "hf_expired_sign_in", r"refused the token \(401\): a sign-in expires"),
])
def test_router_faults_are_one_sentence_each(settings, router, model, token, words):
    s = settings.with_(hf_router=router.base_url.removesuffix("/v1"))
    bot = ChatHaruhi(role_name="sunwukong", engine="hf", api_key=TOKENS["ada"], settings=s)
    assert bot.chat("你是谁？").startswith("Echo:")
    broken = ChatHaruhi(role_name="sunwukong", engine="hf", model=model, api_key=token, settings=s,
                        history=list(bot.history))
    with pytest.raises(EngineError, match=words) as err:
        broken.chat("还在吗？")
    assert "\n" not in str(err.value) and token not in str(err.value)
    assert len(broken.history) == 1  # history intact


# ------------------------------------------------------------------ the app, as on a Space

@pytest.mark.parametrize("role_id, text", [("sunwukong", "你是谁？"), ("sherlock", "Who are you?")])
def test_a_signed_in_visitor_gets_generated_replies(space_app, router, role_id, text):
    url, _, _ = space_app
    client = visitor(url, "ada")
    client.predict(role_id, api_name="/switch_role")
    chat = send(client, text)
    assert text_of(chat[-1]).startswith("Echo:") and text in text_of(chat[-1])
    req = router.requests[-1]
    assert req["headers"]["authorization"] == f"Bearer {TOKENS['ada']}"
    assert req["body"]["model"] == DEFAULT_HF_MODELS[0]  # the first suggested model: it speaks both languages


def test_two_signed_in_visitors_pay_each_for_their_own(space_app, router):
    url, _, _ = space_app
    seen: dict[str, list] = {}

    def talk(who: str) -> None:
        client = visitor(url, who)
        client.predict("sherlock", api_name="/switch_role")
        for i in range(3):
            chat = send(client, f"{who} asks {i}")
            seen.setdefault(who, []).append(text_of(chat[-1]))

    threads = [threading.Thread(target=talk, args=(who,)) for who in TOKENS]
    [t.start() for t in threads]
    [t.join(120) for t in threads]
    for who, token in TOKENS.items():
        assert len(seen[who]) == 3 and all(f"{who} asks" in reply for reply in seen[who])
        mine = [r for r in router.requests if "asks" in str(r["body"]["messages"][-1]["content"])
                and f"{who} asks" in r["body"]["messages"][-1]["content"]]
        assert len(mine) == 3 and all(r["headers"]["authorization"] == f"Bearer {token}" for r in mine)


def test_signed_out_and_out_of_credits_keep_the_chat(space_app, router):
    url, _, _ = space_app
    stranger = visitor(url, None)
    stranger.predict("sunwukong", api_name="/switch_role")
    chat = send(stranger, "你是谁？")
    assert "sign in with Hugging Face" in text_of(chat[-1]) and len(chat) == 3  # greeting, message, the sentence
    ada = visitor(url, "ada")
    ada.predict("sunwukong", api_name="/switch_role")
    send(ada, "你是谁？")
    chat = send(ada, "还在吗？", model="fault-402")
    assert "(402)" in text_of(chat[-1]) and text_of(chat[-2]) == "还在吗？" and text_of(chat[-3]).startswith("Echo:")
    chat = send(ada, "还在吗？")  # the history was kept: the next reply follows the first exchange
    assert len(chat) == 5 and text_of(chat[-1]).startswith("Echo:")


def test_the_token_is_never_logged_or_stored(space_app, router):
    url, log, home = space_app
    client = visitor(url, "ada")
    client.predict("sherlock", api_name="/switch_role")
    send(client, "Remember me?")
    send(client, "And now?", model="fault-429")  # a failure is logged too
    files = [p for p in Path(home).rglob("*") if p.is_file()] + [Path(log)]  # the export: test_signin_browser.py
    assert len(files) > 5
    for path in files:
        data = path.read_bytes()
        for token in TOKENS.values():
            assert token.encode() not in data, f"the token is in {path}"


# ------------------------------------------------------------------ in Chromium

def signed_in_page(chromium, url: str, who: str | None, viewport: dict):
    from support.browser import open_at

    context = chromium.new_context(viewport=viewport, accept_downloads=True)
    if who:
        context.add_cookies([{"name": "session", "value": session_cookie(who, TOKENS[who]), "url": url}])
    return open_at(context, url, viewport)


@pytest.mark.parametrize("name", ["laptop", "phone"])
def test_signed_in_in_chromium(browser, space_app, router, name):
    from support.browser import ARTIFACTS, LAPTOP, PHONE, bot_texts, say, wait_reply

    url, _, _ = space_app
    page = signed_in_page(browser, url, "ada", LAPTOP if name == "laptop" else PHONE)
    page.wait_for_function("() => document.querySelector('#sign-in-note')?.innerText.includes('Signed in as ada')")
    assert "Hugging Face Inference" in page.locator("#engine-note").inner_text()  # the engine her account pays for
    say(page, "你是谁？")  # to 孙悟空, the first character
    texts, _ = wait_reply(page, 2)
    assert texts[-1].startswith("Echo:") and "你是谁？" in texts[-1]
    assert router.requests[-1]["headers"]["authorization"] == f"Bearer {TOKENS['ada']}"
    page.click("#settings button")
    page.wait_for_selector("#sign-in", state="visible")
    assert "Sign out (ada)" in page.locator("#sign-in").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"signed-in-{name}.png"), full_page=name == "phone")
    if name == "laptop":  # the export carries the chat, never the token
        with page.expect_download() as got:
            page.click("#export-chat")
        data = Path(got.value.path()).read_bytes()
        assert "你是谁？".encode() in data and TOKENS["ada"].encode() not in data
    assert not [t for t in bot_texts(page) if "⚠" in t]
    page.context.close()


def test_signed_out_visitor_is_told_what_signing_in_gives(browser, space_app):
    from support.browser import ARTIFACTS, PHONE

    url, _, _ = space_app
    page = signed_in_page(browser, url, None, PHONE)
    note = page.locator("#sign-in-note")
    note.wait_for(state="visible")
    said = note.inner_text()
    assert "Sign in with Hugging Face" in said and "your own Hugging Face account" in said
    assert said.startswith("Now: the offline engine")  # what they are talking to, in the same line
    assert note.locator("a").get_attribute("href") == "/login/huggingface"
    assert "Offline" in page.locator("#engine-note").inner_text()  # the engine a stranger starts with
    page.screenshot(path=str(ARTIFACTS / "signed-out-phone.png"), full_page=True)
    page.context.close()


def test_the_bundled_model_is_not_handed_to_a_chinese_role_unannounced(browser, app_server):
    """The app as README starts it: 孙悟空 on screen, the local engine chosen: its blank model, the shipped fine-tuned
    Gemma, speaks Chinese (no warning); SmolLM2 named, the warning before any message, offering the fine-tune back."""
    from support.browser import ARTIFACTS, LAPTOP, choose_engine, open_page, resize

    page = open_page(browser, app_server)
    warning = page.locator("#language-note")
    assert not warning.is_visible()
    choose_engine(page, "Local model")
    model = page.locator("#model").locator("input").first
    model.wait_for(state="visible")
    assert "Gemma 3 270M ChatHaruhi" in page.locator("#model").inner_text()  # blank = the shipped fine-tune
    page.wait_for_timeout(1000)  # the guard has run for the engine just chosen
    assert not warning.is_visible()
    model.fill("smollm2")
    model.press("Enter")
    warning.wait_for(state="visible")
    said = warning.inner_text()
    assert "SmolLM2-135M-Instruct speaks English only" in said and "孙悟空 speaks Chinese" in said
    assert "offline engine" in said and page.locator("#use-offline").is_visible()
    assert "Choose Gemma 3 270M ChatHaruhi as the local model in Settings (it speaks Chinese)" in said
    assert page.locator("#use-local-model").is_visible()
    page.screenshot(path=str(ARTIFACTS / "language-guard.png"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "language-guard-phone.png"))
    resize(page, LAPTOP)
    page.locator("#picker [data-ref=sherlock]").click()  # English: nothing to say
    page.wait_for_function("() => !document.querySelector('#language-note')?.checkVisibility()")
    assert not page.locator("#use-local-model").is_visible()
    page.locator("#picker [data-ref=sunwukong]").click()
    warning.wait_for(state="visible")
    page.click("#use-local-model")  # the first offer: the local model that speaks Chinese (the blank field)
    page.wait_for_function("() => !document.querySelector('#language-note')?.checkVisibility()")
    assert model.input_value() == "" and page.locator("#use-offline").is_hidden()
    model.fill("smollm2")  # SmolLM2 named again: the warning is back
    model.press("Enter")
    warning.wait_for(state="visible")
    page.click("#use-offline")  # the other offer: back to the character's own lines
    page.wait_for_function("() => !document.querySelector('#language-note')?.checkVisibility()")
    # the engine's note follows a moment later (the warning hides first; the full lane saw "processing" there)
    page.wait_for_function("() => document.querySelector('#engine-note')?.innerText.includes('Offline')")
    page.close()


def test_the_scene_tab_warns_too(browser, app_server):
    from support.browser import cast_scene, choose_engine, open_page

    page = open_page(browser, app_server)
    choose_engine(page, "Local model")
    model = page.locator("#model").locator("input").first
    model.fill("smollm2")  # the English-only model: the blank one speaks both
    model.press("Enter")
    page.get_by_role("tab", name="Group").click()
    cast_scene(page, ["Sherlock Holmes", "孙悟空"])
    warning = page.locator("#scene-language-note")
    warning.wait_for(state="visible")
    assert "孙悟空 speaks Chinese" in warning.inner_text()
    page.close()


def test_a_signed_in_visitors_chats_follow_them_to_another_browser_until_they_forget(browser, space_app):
    """Kept under the account's own folder on the Space (never the token), listed when they come back on another
    browser, apart from another account's; "Forget me" deletes all of it."""
    import time

    from support.browser import ARTIFACTS, LAPTOP, PHONE, pick, say, user_texts, wait_reply

    url, _, home = space_app
    users = Path(home) / "data" / "users"
    page = signed_in_page(browser, url, "cy", LAPTOP)
    page.wait_for_function("() => document.querySelector('#sign-in-note')?.innerText.includes('Signed in as cy')")
    pick(page, "sherlock", "Sherlock")
    say(page, "What is your method?")
    texts, _ = wait_reply(page, 2)
    time.sleep(1.5)  # the page keeps the chat after the reply
    from chatharuhi_core.web.user_store import user_folder

    mine = user_folder(users, "id-cy") / "chats.json"  # (other tests' signed-in visitors have folders too)
    assert "What is your method?" in mine.read_text(encoding="utf-8")
    assert "cy" not in mine.parent.name  # a hash of the account's id names the folder
    assert TOKENS["cy"] not in mine.read_text(encoding="utf-8")
    page.context.close()

    other = signed_in_page(browser, url, "bo", LAPTOP)  # another account on this Space sees nothing of it
    other.wait_for_function("() => document.querySelector('#sign-in-note')?.innerText.includes('Signed in as bo')")
    assert "Welcome back" not in other.locator("#role-status").inner_text()
    pick(other, "sherlock", "Sherlock")
    assert user_texts(other) == []
    other.context.close()

    page = signed_in_page(browser, url, "cy", PHONE)  # the same account on another browser (a phone)
    status = page.locator("#role-status")
    page.wait_for_function("() => document.querySelector('#role-status')?.innerText.includes('Welcome back')")
    assert "Welcome back, Cy: this Space kept your chats with Sherlock Holmes (1 exchange)" in status.inner_text()
    page.screenshot(path=str(ARTIFACTS / "welcome-back-phone.png"), full_page=True)
    pick(page, "sherlock", "Sherlock")
    page.wait_for_function("() => document.querySelectorAll('#chat .message.user').length == 1", timeout=30_000)
    assert user_texts(page) == ["What is your method?"] and wait_reply(page, 2)[0][-1] == texts[-1]
    page.click("#settings button")
    page.locator("#forget-me").click()
    page.wait_for_function("() => document.querySelector('#role-status')?.innerText.includes('Forgotten')")
    assert "1 chat deleted" in status.inner_text() and not mine.exists()
    assert user_texts(page) == []
    page.screenshot(path=str(ARTIFACTS / "forgotten-phone.png"), full_page=True)
    time.sleep(1.5)
    assert not mine.exists()  # the page wrote nothing back after forgetting
    page.context.close()

    page = signed_in_page(browser, url, "cy", LAPTOP)
    page.wait_for_function("() => document.querySelector('#sign-in-note')?.innerText.includes('Signed in as cy')")
    assert "Welcome back" not in page.locator("#role-status").inner_text()
    pick(page, "sherlock", "Sherlock")
    assert user_texts(page) == []
    page.context.close()

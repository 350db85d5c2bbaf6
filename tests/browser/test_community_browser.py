"""Characters as their communities ship them, added through the page: a ChatHaruhi 1.0 folder as a zip with its
pictures, a card whose regex script draws its status bar, and a world-info file linked to the character talked to;
at laptop and phone sizes."""

import copy
import json
import time
import zipfile

import pytest
from support.browser import ARTIFACTS, LAPTOP, PHONE, add_file, open_at, say, wait_reply
from support.make_inputs import KEEPER_CARD, chatharuhi_folder

STATUS = {"scriptName": "status bar", "findRegex": "/<StatusPlaceHolderImpl\\/>/g",
          "replaceString": "<div class=\"status-bar\">⛈ Storm 3/5 · {{user}}</div>", "placement": [2],
          "markdownOnly": True, "promptOnly": False, "disabled": False}
BROKEN = {"scriptName": "half-written", "findRegex": "/(unclosed/g", "replaceString": "", "placement": [2]}
WORLD = {"entries": {"0": {"uid": 0, "key": ["beacon"], "comment": "The beacon", "content": "The beacon burns whale oil.",
                           "order": 100, "position": 0, "disable": False},
                     "1": {"uid": 1, "key": ["cove"], "comment": "The cove", "content": "Smugglers use the north cove.",
                           "order": 90, "position": 1, "disable": False}}}


def _haruhi_zip(tmp_path):
    folder = chatharuhi_folder(tmp_path / "src")
    target = tmp_path / "haruhi.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                zf.write(p, f"haruhi/{p.relative_to(folder).as_posix()}")
    return target


def _card(tmp_path):
    card = copy.deepcopy(KEEPER_CARD)
    card["data"]["first_mes"] = "Shut the door, {{user}}, the wind bites.<StatusPlaceHolderImpl/>"
    card["data"]["extensions"]["regex_scripts"] = [BROKEN, STATUS]
    (tmp_path / "mira.json").write_text(json.dumps(card), encoding="utf-8")
    return tmp_path / "mira.json"


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_a_chatharuhi_folder_a_scripted_card_and_a_world_added_in_the_page(browser, app_server, tmp_path, size):
    page = open_at(browser, app_server, LAPTOP if size == "laptop" else PHONE)
    status = add_file(page, _haruhi_zip(tmp_path), expect="Added 春日")
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('春日')")
    time.sleep(1)
    assert "4 scenes" in status
    say(page, "普通的人类你没有兴趣吗？")
    wait_reply(page, 1)  # a ChatHaruhi 1.0 folder has no greeting: the reply is the first message
    page.wait_for_selector("#scene-image img", timeout=30_000)  # the picture of the line closest to the reply
    page.screenshot(path=str(ARTIFACTS / f"community-haruhi-{size}.png"), full_page=False)

    status = add_file(page, _card(tmp_path), expect="Added Mira")
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('Mira')")
    time.sleep(1)  # the switch's follow-up events settle before the next upload, as test_browser's imports wait
    assert "'half-written' was skipped" in status  # one sentence for the script that does not compile
    page.wait_for_function("() => (document.querySelector('#chat')?.innerText || '').includes('Storm 3/5')")
    chat = page.locator("#chat")
    assert "StatusPlaceHolderImpl" not in chat.inner_html() and "Storm 3/5" in chat.inner_text()
    chat.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"community-card-{size}.png"), full_page=False)

    (tmp_path / "gull-rock.json").write_text(json.dumps({**WORLD, "name": "Gull Rock"}), encoding="utf-8")
    add_file(page, tmp_path / "gull-rock.json", expect="with the world")  # linked to Mira, the one talked to
    page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('World info')")
    assert "Gull Rock" in page.locator("#about").inner_text()
    page.locator("#about").screenshot(path=str(ARTIFACTS / f"community-world-{size}.png"))
    say(page, "Is the beacon lit tonight?")
    wait_reply(page, 2)
    page.get_by_text("Classic scenes retrieved for the last reply").click()
    page.wait_for_function("() => (document.querySelector('#scenes')?.innerText || '').includes('The beacon')")
    page.screenshot(path=str(ARTIFACTS / f"community-card-world-{size}.png"), full_page=False)
    page.close()


def _panel_card(tmp_path, port: int):
    """A card as SillyTavern's community ships them: a display-only script turns the greeting's placeholder into a
    ```html page (a tall panel, a script that rewrites it, and two requests that must never leave the frame)."""
    page_html = ("<!DOCTYPE html><html><head><style>#hp{height:420px;background:#fde}</style></head><body>"
                 f"<div id=\"hp\">HP 10 static</div><img src=\"http://127.0.0.1:{port}/img.png\">"
                 "<script>document.getElementById('hp').textContent='HP 10 ran';"
                 f"fetch('http://127.0.0.1:{port}/fetch').catch(() => {{}});</script></body></html>")
    script = {"scriptName": "status page", "findRegex": "/<StatusPlaceHolderImpl\\/>/g",
              "replaceString": "\n```html\n" + page_html + "\n```\n", "placement": [2], "markdownOnly": True,
              "promptOnly": False, "disabled": False}
    card = copy.deepcopy(KEEPER_CARD)
    card["data"]["name"] = "Mira Panel"
    card["data"]["first_mes"] = "Shut the door, {{user}}, the wind bites.<StatusPlaceHolderImpl/>"
    card["data"]["extensions"]["regex_scripts"] = [script]
    (tmp_path / "mira-panel.json").write_text(json.dumps(card), encoding="utf-8")
    return tmp_path / "mira-panel.json"


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_a_cards_html_panel_is_a_sandboxed_frame_whose_scripts_wait_for_the_visitor(browser, app_server, tmp_path,
                                                                                      size):
    """Issue 67: the panel's page showed as source code. It is a frame sized to its content, never of the page's
    origin; its scripts run only once this visitor allows them for this card; no request leaves it either way."""
    import http.server
    import threading

    hits = []

    class Count(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    spy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Count)
    threading.Thread(target=spy.serve_forever, daemon=True).start()
    try:
        page = open_at(browser.new_context(viewport=LAPTOP if size == "laptop" else PHONE), app_server,
                       LAPTOP if size == "laptop" else PHONE)
        add_file(page, _panel_card(tmp_path, spy.server_address[1]), expect="Added Mira Panel")
        page.wait_for_function("() => (document.querySelector('#about')?.innerText || '').includes('Mira Panel')")
        frame = page.locator("#chat div.card-frame iframe").first
        frame.wait_for(timeout=30_000)
        assert "DOCTYPE" not in page.locator("#chat").inner_text()  # no source code in the chat
        assert frame.get_attribute("sandbox") == "allow-scripts"  # never the page's origin
        inside = page.frame_locator("#chat div.card-frame iframe").first
        inside.locator("#hp").wait_for(timeout=10_000)
        page.wait_for_function("() => parseInt(document.querySelector('#chat div.card-frame iframe').style.height) > 400",
                               timeout=10_000)  # sized to its content
        assert inside.locator("#hp").inner_text() == "HP 10 static"  # its script did not run
        page.locator("#chat div.card-frame button").click()  # this visitor allows it, for this card
        page.frame_locator("#chat div.card-frame iframe").first.locator("#hp").filter(has_text="ran").wait_for(
            timeout=10_000)
        page.locator("#chat").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"community-panel-{size}.png"), full_page=False)
        page.wait_for_timeout(1500)
        assert hits == []  # neither the picture nor the script's fetch left the frame
        other = open_at(browser.new_context(viewport=LAPTOP), app_server, LAPTOP)  # another visitor's browser
        add_file(other, _panel_card(tmp_path, spy.server_address[1]), expect="Added Mira Panel")
        other.frame_locator("#chat div.card-frame iframe").first.locator("#hp").wait_for(timeout=30_000)
        assert other.frame_locator("#chat div.card-frame iframe").first.locator("#hp").inner_text() == "HP 10 static"
        page.close()
        other.close()
    finally:
        spy.shutdown()

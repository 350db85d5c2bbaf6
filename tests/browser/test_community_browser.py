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

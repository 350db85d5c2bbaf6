"""A character card in a real browser: the visitor's name in the greeting, lorebook entries in the scenes panel."""

import json

from support.browser import ARTIFACTS, add_file, open_page, say, throwaway_settings, wait_reply
from support.make_inputs import ASH_CARD

from chatharuhi_core.roles.cards import write_card_png
from chatharuhi_core.roles.sources import load_role


def test_upload_a_card_type_a_name_see_it_greeted_and_the_lore_marked(browser, app_server, tmp_path):
    (tmp_path / "ash.json").write_text(json.dumps(ASH_CARD), encoding="utf-8")
    card = write_card_png(load_role(tmp_path / "ash.json", settings=throwaway_settings(tmp_path)), tmp_path / "ash.png")
    page = open_page(browser, app_server)
    add_file(page, card, "", expect="Added Captain Ash")
    page.wait_for_function("() => document.querySelector('#chat')?.innerText.includes('Welcome aboard, friend.')")
    page.locator("#user-role textarea").fill("")
    page.locator("#user-role textarea").press_sequentially("Sam", delay=60)
    page.wait_for_function("() => document.querySelector('#chat')?.innerText.includes('Welcome aboard, Sam.')",
                           timeout=30_000)  # each key's change runs in turn; a busy machine took over 15 s once
    # the same event redraws the heading, but Gradio's Markdown draws it asynchronously (it awaits its renderer),
    # so it may follow the chat by a moment on a busy machine: read straight after, it once still said "Sa"
    page.wait_for_function("() => document.querySelector('#about')?.innerText.includes('owes Sam a favour')",
                           timeout=10_000)
    say(page, "Set course for Ashfall at first light.")
    texts, _ = wait_reply(page, 2)
    assert "{{user}}" not in texts[-1] and "⚠️" not in texts[-1]
    page.get_by_text("Classic scenes retrieved for the last reply").click()
    page.wait_for_function("() => (document.querySelector('#scenes')?.innerText || '').includes('Lorebook entries')")
    panel = page.locator("#scenes").inner_text()
    assert "📖 Ashfall · key 'Ashfall' in the message being answered" in panel
    assert "📖 The crew never flies through storms. · constant" in panel
    page.screenshot(path=str(ARTIFACTS / "card-lore.png"), full_page=True)
    page.close()

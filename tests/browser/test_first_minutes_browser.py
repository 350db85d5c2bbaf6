"""A judge's first minutes with the offline engine, in Chromium, as README starts the app (issue 41): the
questions a new visitor asks first, in a one-to-one chat and in a group scene, are answered to the visitor,
never with a name or nickname for somebody else ("呆子" to the master), and "who are you" is answered by
the character saying who it is."""

import time

from support.browser import open_page, open_scene, say, wait_lines, wait_reply

from chatharuhi_core.chat.asking import asked, fit
from chatharuhi_core.roles.sources import load_role

FIRST_QUESTIONS = {
    "sunwukong": ["你是谁？", "你觉得八戒怎么样？", "今天吃什么？", "你会不会七十二变？"],
    "sherlock": ["Who are you?", "What do you think of Moriarty?", "What is my dog called?", "Do you play the violin?"],
}


def test_first_questions_are_answered_to_the_visitor(browser, app_server):
    page = open_page(browser, app_server)
    for role_id, questions in FIRST_QUESTIONS.items():
        role = load_role(role_id)
        page.locator(f"#picker [data-ref={role_id}]").click()
        page.wait_for_function(f"() => document.querySelector('#about')?.innerText.includes('{role.name}')")
        time.sleep(1)  # the switch's events settle (孙悟空 is already shown: a message sent at once was redrawn away)
        visitor = page.locator("#user-role textarea").input_value()
        assert visitor == role.user_name
        for n, question in enumerate(questions):
            say(page, question)
            reply = wait_reply(page, n + 2, timeout=60 if n == 0 else 30)[0][-1]  # a first message builds the store
            assert not role.addressing.elsewhere(reply, visitor), (question, reply)
            if asked(question).kind == "who":
                assert fit(asked(question), reply, role.speaker_names) == 1.0, reply
    page.close()


def test_in_a_group_scene_a_character_answers_the_visitor_not_someone_else(browser, app_server):
    context = browser.new_context()
    page = open_scene(context, app_server, ["Sherlock Holmes", "Count Dracula", "Alice"], "Watson")
    sherlock = load_role("sherlock")
    said = []
    for question in ["Sherlock, who are you?", "Sherlock, what do you think of Moriarty?"]:
        page.fill("#scene-message textarea", question)
        page.click("#scene-send")
        said = wait_lines(page, len(said) + 2)
        after = said[max(i for i, (rid, text) in enumerate(said) if rid is None and text == question) + 1:]
        answers = [text for rid, text in after if rid == "sherlock"]
        assert answers, said  # he was named: he answers
        assert not sherlock.addressing.elsewhere(answers[0], "Watson"), answers
    context.close()

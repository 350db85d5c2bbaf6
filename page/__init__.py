"""The Gradio page, one module per part, each a panel with `render` (its components, as attributes) and
`wire` (its events); the plain work its handlers do is in chatharuhi_core.web.

    visit.py           one visitor's states, and the character view every switch draws
    settings_panel.py  the engine and its settings, sent by name as one mapping and read in one place (choice)
    chat_tab.py        the chat: picker, chat, message box, voice, names, feedback
    turns.py           a reply streamed into the chat (send, regenerate, an edited message)
    switches.py        another character, an import, a clear: the reply in flight stops first
    memory_panel.py    what the character keeps of the conversation
    group_scene.py     the group-scene tab (2 to 6 characters and the visitor)
    add_tab.py         adding a character from the Hub or a file
    session.py         a visit's start and what this browser (or a signed-in account) keeps
    api.py             the documented API, which is also the MCP server's tools

app.py reads the Settings once, builds the page from these over it (each part holds it; its handlers are the
part's methods) and launches it.
"""

"""What the page does for one visitor, as plain functions over plain values, with no Gradio import:
common (the settings panel as sent, portraits, the frame throttle, feedback), picker, chat (one character)
and scene (a group scene). The page (page/, one module per part) holds the Gradio layout and the event wiring."""

"""The chat path: one turn from the visitor's message to the character's streamed reply (embedding,
story store, prompt, reply engines), plus the page's per-visitor chat state, transcripts and voice."""

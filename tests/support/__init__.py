"""What the tests share, so that no test module imports another: servers on loopback, the scripted OpenAI server,
the inputs the tests make, a signed-in visitor, and the helpers that drive the app, its CLI and the browser.

Imported as `support.<module>`: pyproject.toml puts tests/ on pytest's path (and bench/ puts it on its own)."""

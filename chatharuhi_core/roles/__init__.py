"""Role formats and sources: the Role record, the package format, and every place a role comes from
(bundled folders, zips, the Hub, ChatHaruhi jsonl, character cards, scripts)."""

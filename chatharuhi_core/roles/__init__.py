"""What a character is: the Role record and its package format, the `Name:「line」` grammar of its scripts
(lines), its classic scenes in a Chroma store (store), the names it is called by, and every place a role
comes from (bundled folders, zips, the Hub, ChatHaruhi jsonl, character cards, scripts). Imports only
the ground floor."""

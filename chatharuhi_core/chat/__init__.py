"""One character answering: the prompt (persona, retrieved scenes, history, query), ChatHaruhi, which
returns one Reply record per turn, the engines that write the reply (engines/, a registry), saved chats
and the voice. Imports roles/ and the ground floor, never the page."""

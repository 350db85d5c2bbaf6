"""A visitor signed in with Hugging Face, as Gradio sees one on a Space: the app runs with the variables a Space
with `hf_oauth: true` gets, and the visitor's browser holds the session cookie that Gradio's OAuth callback
writes (Starlette's signed session, keyed by a hash of OAUTH_CLIENT_SECRET). Gradio reads the profile and the
token from that cookie and hands them to the app's functions, exactly as after a real sign-in; only the round
trip to huggingface.co is left out (README describes it step by step)."""

from __future__ import annotations

import base64
import hashlib
import json
import time

CLIENT_SECRET = "test-oauth-secret"


def space_env(router: str, **extra: str) -> dict[str, str]:
    """The variables of a Space with sign-in (hf_oauth: true, scope inference-api), its router on loopback."""
    return dict(SYSTEM="spaces", SPACE_ID="chatharuhi/test-space", SPACE_HOST="", OAUTH_CLIENT_ID="test-client",
                OAUTH_CLIENT_SECRET=CLIENT_SECRET, OAUTH_SCOPES="openid profile inference-api",
                OPENID_PROVIDER_URL="http://127.0.0.1:9", HF_HUB_OFFLINE="0", CHATHARUHI_HF_ROUTER=router, **extra)


def session_cookie(username: str, token: str, expires_in: float = 8 * 3600) -> str:
    """The value of the `session` cookie after `username` signed in and was given `token`."""
    import itsdangerous

    now = int(time.time())
    info = {
        "access_token": token, "token_type": "bearer", "scope": "openid profile inference-api",
        "expires_at": now + int(expires_in),
        "userinfo": {"sub": f"id-{username}", "name": username.title(), "preferred_username": username,
                     "profile": f"https://huggingface.co/{username}", "picture": "", "iss": "https://huggingface.co"},
    }
    secret = hashlib.sha256((CLIENT_SECRET + "-v4").encode()).hexdigest()
    data = base64.b64encode(json.dumps({"oauth_info": info}).encode("utf-8"))
    return itsdangerous.TimestampSigner(secret).sign(data).decode("utf-8")

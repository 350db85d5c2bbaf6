"""Group scenes, several characters and the visitor in one chat: one shared transcript, each character's
own prompt, retrieved classic scenes and view (cast, order, scene, saved, cli).

    from chatharuhi_core.scene import Scene
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cast import Member, SceneLine, SceneState
    from .scene import Scene, SceneSetup

__all__ = ["Member", "Scene", "SceneLine", "SceneSetup", "SceneState"]


def __getattr__(name: str):
    """Imported on first use: the command line reads the order names without loading the chat path."""
    if name in ("SceneLine", "Member", "SceneState"):
        from . import cast

        return getattr(cast, name)
    if name == "Line":  # its name until a chat line, a scene line and a script line had one each (README, Words)
        from ..deprecated import renamed
        from .cast import SceneLine

        renamed("chatharuhi_core.scene.Line", "chatharuhi_core.scene.SceneLine")
        return SceneLine
    if name in ("Scene", "SceneSetup"):
        from . import scene

        return getattr(scene, name)
    raise AttributeError(name)

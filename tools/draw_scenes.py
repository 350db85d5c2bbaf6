"""Draw the captioned scene pictures some bundled roles ship (original art, CC-BY-4.0).

    python tools/draw_scenes.py      # rewrites characters/*/images/

The page shows the picture whose caption is closest in meaning to the character's reply.
"""

from __future__ import annotations

import json
from pathlib import Path

from draw_portraits import cloud, gradient
from PIL import Image, ImageDraw

W, H = 1024, 640
ROOT = Path(__file__).resolve().parent.parent / "characters"


def canvas(top, bottom) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = gradient(top, bottom).resize((W, H))
    return img, ImageDraw.Draw(img)


def staff():
    img, d = canvas((255, 214, 120), (230, 110, 60))
    for x, y, r in ((180, 520, 90), (520, 560, 120), (860, 520, 100)):
        cloud(d, x, y, r, (255, 248, 235))
    d.line([(160, 470), (880, 150)], fill=(190, 30, 30), width=40)
    for x, y in ((160, 470), (880, 150)):
        d.ellipse([x - 44, y - 44, x + 44, y + 44], fill=(250, 200, 40))
    d.ellipse([760, 60, 900, 200], outline=(255, 240, 180), width=10)  # a shimmer of magic
    return img


def mountain():
    img, d = canvas((150, 210, 240), (90, 170, 90))
    d.polygon([(0, 640), (260, 200), (520, 640)], fill=(70, 130, 70))
    d.polygon([(300, 640), (640, 140), (1024, 640)], fill=(60, 115, 65))
    d.rectangle([590, 300, 690, 640], fill=(200, 230, 250))  # the water-curtain waterfall
    for x, y in ((180, 420), (420, 470), (820, 430), (900, 520)):
        d.ellipse([x - 34, y - 34, x + 34, y + 34], fill=(250, 150, 160))  # peaches
        d.polygon([(x, y - 34), (x + 30, y - 60), (x + 10, y - 30)], fill=(80, 150, 60))
    for x in (300, 760):  # two small monkeys
        d.ellipse([x - 30, 540, x + 30, 600], fill=(150, 88, 40))
        d.ellipse([x - 20, 500, x + 20, 540], fill=(150, 88, 40))
    return img


def palace():
    img, d = canvas((90, 120, 200), (230, 200, 240))
    for x, y, r in ((150, 520, 110), (500, 580, 140), (870, 520, 120), (330, 300, 70)):
        cloud(d, x, y, r, (255, 255, 255))
    d.rectangle([360, 260, 680, 470], fill=(200, 40, 40))
    d.polygon([(320, 270), (512, 150), (720, 270)], fill=(240, 190, 40))
    d.polygon([(360, 200), (512, 110), (670, 200)], fill=(240, 190, 40))
    for x in range(390, 680, 60):
        d.rectangle([x, 320, x + 20, 470], fill=(250, 210, 80))
    return img


def violin():
    img, d = canvas((80, 50, 40), (30, 20, 18))
    d.rectangle([620, 260, 960, 640], fill=(60, 40, 30))  # fireplace
    d.rectangle([680, 360, 900, 640], fill=(20, 12, 10))
    d.polygon([(720, 640), (790, 470), (830, 560), (860, 450), (880, 640)], fill=(250, 150, 40))
    body = (150, 80, 30)
    d.ellipse([180, 300, 380, 460], fill=body)
    d.ellipse([200, 420, 400, 600], fill=body)
    d.rectangle([280, 150, 300, 330], fill=(40, 25, 15))  # neck
    d.line([(150, 200), (520, 560)], fill=(220, 200, 170), width=6)  # bow
    return img


def magnifier():
    img, d = canvas((200, 190, 170), (150, 130, 100))
    for i, (x, y) in enumerate(((150, 500), (260, 430), (380, 480), (500, 410), (620, 460))):
        d.ellipse([x, y, x + 60, y + 100], fill=(90, 70, 50))  # footprints in the mud
        d.ellipse([x + 10, y - 40 + (i % 2) * 5, x + 50, y - 5], fill=(90, 70, 50))
    d.ellipse([560, 140, 860, 440], outline=(60, 50, 40), width=30)
    d.ellipse([590, 170, 830, 410], fill=(225, 235, 240))
    d.line([(820, 400), (960, 560)], fill=(60, 40, 30), width=40)
    return img


def baker_street():
    img, d = canvas((110, 120, 130), (50, 55, 60))
    d.rectangle([300, 120, 720, 640], fill=(60, 40, 35))  # the house front
    d.rectangle([440, 330, 580, 640], fill=(20, 40, 30))  # the door
    d.rectangle([470, 260, 550, 300], fill=(220, 200, 120))  # 221B plate
    for x in (330, 600):
        d.rectangle([x, 160, x + 90, 260], fill=(230, 200, 120))  # lit windows
    fog = Image.new("RGB", (W, H), (200, 205, 210))
    return Image.blend(img, fog, 0.25)


SCENES = {
    "sunwukong": [
        (staff, "staff.png", "金箍棒：一万三千五百斤的如意金箍棒，大能顶天立地，小能变成绣花针。"),
        (mountain, "mountain.png", "花果山水帘洞：猴儿们、桃子和瀑布，美猴王的老家。"),
        (palace, "palace.png", "大闹天宫：云端上的天庭宫殿，齐天大圣和玉帝、天兵天将。"),
    ],
    "sherlock": [
        (violin, "violin.png", "The violin by the fire at Baker Street, played late into the night while thinking."),
        (magnifier, "clues.png", "A lens over footprints and mud: clues, deduction and the scene of a crime."),
        (baker_street, "baker-street.png", "221B Baker Street in the London fog, where clients knock at the door."),
    ],
}


def main() -> None:
    for rid, scenes in SCENES.items():
        folder = ROOT / rid / "images"
        folder.mkdir(exist_ok=True)
        rows = []
        for draw, name, caption in scenes:
            draw().resize((512, 320), Image.LANCZOS).save(folder / name, optimize=True)
            rows.append({"file": name, "caption": caption})
        (folder / "images.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print("wrote", folder)


if __name__ == "__main__":
    main()

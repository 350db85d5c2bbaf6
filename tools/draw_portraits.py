"""Draw the bundled characters' portraits (original art, made by code, CC-BY-4.0).

    python tools/draw_portraits.py      # rewrites characters/*/image.png

Drawn at 2x and downscaled for smooth edges.
"""

from __future__ import annotations

import math
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

S = 1024  # canvas, downscaled to 512
ROOT = Path(__file__).resolve().parent.parent / "characters"


def gradient(top: tuple, bottom: tuple) -> Image.Image:
    img = Image.new("RGB", (S, S))
    d = ImageDraw.Draw(img)
    for y in range(S):
        t = y / (S - 1)
        d.line([(0, y), (S, y)], fill=tuple(int(a + (b - a) * t) for a, b in zip(top, bottom)))
    return img


def cloud(d: ImageDraw.ImageDraw, x: int, y: int, r: int, fill) -> None:
    for dx, dy, k in ((0, 0, 1.0), (-r, r // 3, 0.75), (r, r // 3, 0.75), (-r // 2, -r // 3, 0.8), (r // 2, -r // 3, 0.8)):
        rr = int(r * k)
        d.ellipse([x + dx - rr, y + dy - rr, x + dx + rr, y + dy + rr], fill=fill)


def wukong() -> Image.Image:
    img = gradient((255, 196, 92), (214, 72, 40))
    d = ImageDraw.Draw(img)
    # sun and clouds
    d.ellipse([640, 80, 940, 380], fill=(255, 236, 160))
    for x, y, r in ((180, 860, 90), (860, 900, 110), (520, 960, 80)):
        cloud(d, x, y, r, (255, 248, 235))
    # golden staff behind the head
    d.line([(130, 950), (900, 120)], fill=(190, 30, 30), width=46)
    for t in (0.0, 1.0):
        x, y = 130 + (900 - 130) * t, 950 + (120 - 950) * t
        d.line([(x - 40 * (1 - 2 * t) * 0.7, y + 44 * (1 - 2 * t) * 0.7), (x + 40 * (1 - 2 * t) * 0.7, y - 44 * (1 - 2 * t) * 0.7)], fill=(250, 200, 40), width=56)
    # ears
    fur, face = (150, 88, 40), (246, 200, 160)
    for cx in (270, 754):
        d.ellipse([cx - 95, 440, cx + 95, 630], fill=fur)
        d.ellipse([cx - 55, 480, cx + 55, 590], fill=face)
    # head and face
    d.ellipse([262, 230, 762, 790], fill=fur)
    d.polygon([(512, 400), (660, 360), (700, 520), (640, 720), (512, 770), (384, 720), (324, 520), (364, 360)], fill=face)
    d.ellipse([330, 360, 512, 560], fill=face)
    d.ellipse([512, 360, 694, 560], fill=face)
    # golden headband
    d.chord([268, 300, 756, 560], 190, 350, outline=(250, 200, 40), width=34)
    d.ellipse([492, 296, 532, 336], fill=(250, 200, 40), outline=(170, 120, 20), width=6)
    # fiery golden eyes
    for cx in (430, 594):
        d.ellipse([cx - 50, 450, cx + 50, 520], fill=(220, 40, 30))
        d.ellipse([cx - 38, 458, cx + 38, 512], fill=(255, 214, 40))
        d.ellipse([cx - 15, 468, cx + 15, 502], fill=(40, 20, 10))
        d.ellipse([cx - 6, 472, cx + 4, 482], fill=(255, 255, 255))
    # brows, nose, grin
    d.line([(370, 430), (470, 445)], fill=(90, 50, 20), width=14)
    d.line([(554, 445), (654, 430)], fill=(90, 50, 20), width=14)
    d.ellipse([490, 560, 510, 578], fill=(120, 60, 30))
    d.ellipse([514, 560, 534, 578], fill=(120, 60, 30))
    d.chord([420, 560, 604, 700], 10, 170, fill=(160, 40, 40))
    d.rectangle([440, 628, 584, 640], fill=(255, 255, 255))
    return img


def holmes() -> Image.Image:
    img = gradient((70, 88, 112), (22, 28, 40))
    d = ImageDraw.Draw(img)
    # gas lamp glow
    glow = Image.new("L", (S, S), 0)
    ImageDraw.Draw(glow).ellipse([420, 120, 1000, 700], fill=200)
    glow = glow.filter(ImageFilter.GaussianBlur(90))
    img = Image.composite(Image.new("RGB", (S, S), (236, 196, 120)), img, glow)
    d = ImageDraw.Draw(img)
    # rooftops and chimneys
    roof = [(0, 820), (120, 820), (120, 760), (170, 760), (170, 800), (300, 800), (340, 740), (420, 740), (460, 800),
            (640, 800), (640, 720), (680, 720), (680, 790), (820, 790), (880, 740), (960, 790), (1024, 790), (1024, 1024), (0, 1024)]
    d.polygon(roof, fill=(14, 16, 24))
    # profile silhouette facing left
    ink = (18, 18, 24)
    head = [(560, 330), (470, 350), (430, 420), (420, 470), (372, 540), (398, 556), (410, 580), (400, 604),
            (424, 620), (420, 660), (470, 690), (540, 690), (560, 760), (520, 880), (760, 1024), (880, 1024),
            (850, 860), (760, 760), (720, 640), (700, 500), (660, 380)]
    d.polygon(head, fill=ink)
    # deerstalker cap with both peaks and ear flap
    d.chord([440, 230, 720, 470], 180, 360, fill=(110, 84, 56))
    d.polygon([(440, 350), (330, 372), (450, 392)], fill=(110, 84, 56))
    d.polygon([(715, 340), (810, 380), (710, 400)], fill=(110, 84, 56))
    for y in range(262, 350, 22):  # a quiet check pattern on the tweed
        for x in range(470 + (y // 22 % 2) * 11, 710, 22):
            d.rectangle([x, y, x + 8, y + 8], fill=(92, 68, 44))
    d.line([(446, 346), (714, 346)], fill=(70, 50, 32), width=12)
    d.polygon([(600, 352), (660, 352), (650, 460), (610, 440)], fill=(96, 72, 48))
    # curved pipe with smoke
    d.line([(418, 636), (360, 660), (330, 690)], fill=(80, 50, 30), width=16)
    d.rounded_rectangle([292, 640, 346, 720], radius=14, fill=(96, 60, 34))
    smoke = Image.new("L", (S, S), 0)
    sd = ImageDraw.Draw(smoke)
    for i in range(7):
        x = 318 + int(40 * math.sin(i * 0.9))
        y = 610 - i * 60
        sd.ellipse([x - 22 - i * 4, y - 22 - i * 4, x + 22 + i * 4, y + 22 + i * 4], fill=max(40, 150 - i * 16))
    smoke = smoke.filter(ImageFilter.GaussianBlur(14))
    img = Image.composite(Image.new("RGB", (S, S), (220, 220, 226)), img, smoke)
    # coat collar (Inverness cape)
    d = ImageDraw.Draw(img)
    d.polygon([(520, 860), (600, 760), (700, 800), (900, 1024), (470, 1024)], fill=(58, 52, 48))
    return img


def online() -> Image.Image:
    """The tile for Hub roles: a bust under a cloud, for 'fetched when you pick it'."""
    img = gradient((120, 150, 210), (60, 70, 130))
    d = ImageDraw.Draw(img)
    cloud(d, 512, 250, 130, (240, 244, 255))
    d.rectangle([392, 250, 632, 330], fill=(240, 244, 255))
    d.polygon([(512, 300), (472, 250), (552, 250)], fill=(120, 150, 210))  # a down arrow cut in the cloud
    d.rectangle([496, 180, 528, 252], fill=(120, 150, 210))
    d.ellipse([392, 420, 632, 660], fill=(34, 38, 70))
    d.chord([232, 640, 792, 1200], 180, 360, fill=(34, 38, 70))
    return img


def main() -> None:
    for rid, draw in (("sunwukong", wukong), ("sherlock", holmes)):
        out = ROOT / rid / "image.png"
        draw().resize((512, 512), Image.LANCZOS).save(out, optimize=True)
        print("wrote", out)
    out = ROOT.parent / "assets" / "online.png"
    online().resize((256, 256), Image.LANCZOS).save(out, optimize=True)
    print("wrote", out)


if __name__ == "__main__":
    main()

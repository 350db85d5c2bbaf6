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


def daiyu() -> Image.Image:
    img = gradient((214, 236, 214), (120, 160, 130))
    d = ImageDraw.Draw(img)
    for x, w in ((90, 34), (190, 26), (860, 30), (950, 22)):  # bamboo with joints
        d.rectangle([x, 0, x + w, S], fill=(70, 120, 70))
        for y in range(60, S, 170):
            d.rectangle([x - 4, y, x + w + 4, y + 10], fill=(50, 95, 55))
        d.polygon([(x + w, 300), (x + w + 110, 250), (x + w + 20, 330)], fill=(80, 140, 80))
    d.ellipse([372, 250, 652, 560], fill=(40, 36, 40))  # hair
    d.ellipse([452, 170, 572, 290], fill=(40, 36, 40))  # bun
    d.ellipse([402, 300, 622, 560], fill=(250, 228, 214))  # face
    d.rectangle([402, 290, 622, 360], fill=(40, 36, 40))  # fringe
    d.line([(560, 200), (640, 150)], fill=(220, 200, 120), width=8)  # hairpin
    for cx in (462, 562):
        d.arc([cx - 30, 410, cx + 30, 440], 200, 340, fill=(60, 40, 40), width=6)  # lowered eyes
    d.ellipse([497, 495, 527, 510], fill=(200, 100, 110))
    d.polygon([(512, 540), (300, 1024), (724, 1024)], fill=(200, 220, 235))  # robe
    d.polygon([(512, 560), (440, 1024), (584, 1024)], fill=(160, 190, 215))
    for x, y in ((250, 620), (760, 500), (680, 780), (330, 880), (820, 900), (200, 420)):
        d.ellipse([x, y, x + 26, y + 18], fill=(244, 170, 190))  # falling petals
    return img


def zhuge() -> Image.Image:
    img = gradient((24, 30, 70), (70, 60, 110))
    d = ImageDraw.Draw(img)
    for x, y in ((120, 120), (300, 80), (860, 140), (760, 60), (930, 300), (80, 330), (560, 40)):
        d.ellipse([x, y, x + 10, y + 10], fill=(250, 240, 200))  # stars read at night
    d.polygon([(512, 560), (250, 1024), (774, 1024)], fill=(236, 236, 228))  # white robe
    d.polygon([(512, 580), (470, 1024), (554, 1024)], fill=(60, 80, 120))
    d.ellipse([412, 300, 612, 540], fill=(240, 214, 184))  # face
    d.rectangle([420, 190, 604, 320], fill=(40, 50, 80))  # guan jin headdress
    d.polygon([(420, 190), (512, 130), (604, 190)], fill=(40, 50, 80))
    d.polygon([(470, 520), (512, 620), (554, 520)], fill=(60, 56, 60))  # beard
    for cx in (470, 554):
        d.line([(cx - 24, 410), (cx + 24, 410)], fill=(40, 30, 30), width=8)
    fan = [(640, 900), (600, 620), (660, 560), (740, 560), (800, 620), (700, 900)]  # feather fan
    d.polygon(fan, fill=(250, 250, 250))
    for k in range(5):
        d.line([(670, 900), (610 + k * 45, 600)], fill=(200, 200, 210), width=4)
    d.rectangle([655, 880, 685, 1000], fill=(120, 80, 40))
    return img


def luzhishen() -> Image.Image:
    img = gradient((240, 190, 120), (150, 80, 40))
    d = ImageDraw.Draw(img)
    d.line([(150, 1024), (330, 60)], fill=(90, 90, 100), width=34)  # iron staff
    d.chord([280, 20, 380, 120], 0, 360, fill=(120, 120, 130))
    d.polygon([(512, 600), (180, 1024), (844, 1024)], fill=(130, 60, 40))  # robe
    d.polygon([(512, 620), (380, 1024), (512, 1024)], fill=(200, 120, 60))
    d.ellipse([342, 220, 682, 620], fill=(236, 180, 140))  # big bald head
    d.ellipse([392, 250, 470, 300], fill=(250, 210, 180))  # shine
    for cx in (440, 584):
        d.line([(cx - 44, 370), (cx + 44, 350 if cx < 512 else 390)], fill=(50, 30, 20), width=18)  # bushy brows
        d.ellipse([cx - 20, 400, cx + 20, 440], fill=(40, 25, 20))
    d.polygon([(380, 500), (644, 500), (600, 640), (424, 640)], fill=(50, 35, 30))  # beard
    d.chord([452, 470, 572, 560], 0, 180, fill=(170, 60, 50))  # laughing mouth
    for i in range(18):  # prayer beads
        a = math.pi * (0.15 + 0.7 * i / 17)
        x, y = 512 + 230 * math.cos(a), 560 + 200 * math.sin(a)
        d.ellipse([x - 20, y - 20, x + 20, y + 20], fill=(110, 50, 30), outline=(60, 25, 15), width=4)
    return img


def elizabeth() -> Image.Image:
    img = gradient((246, 222, 222), (200, 150, 160))
    d = ImageDraw.Draw(img)
    d.ellipse([150, 90, 874, 960], fill=(252, 246, 236), outline=(170, 130, 90), width=22)  # cameo frame
    ink = (120, 70, 80)
    profile = [(560, 250), (470, 270), (430, 340), (436, 420), (400, 470), (430, 490), (424, 520), (440, 540),
               (436, 580), (470, 610), (520, 610), (530, 700), (470, 800), (700, 820), (660, 690), (660, 520), (640, 330)]
    d.polygon(profile, fill=ink)
    d.chord([430, 180, 720, 460], 180, 360, fill=(150, 90, 100))  # bonnet
    d.polygon([(430, 320), (380, 340), (450, 360)], fill=(150, 90, 100))
    d.line([(620, 420), (690, 700)], fill=(236, 200, 210), width=10)  # ribbon
    for x, y in ((300, 760), (720, 300), (740, 780)):
        d.ellipse([x, y, x + 40, y + 40], fill=(230, 160, 170))  # small roses
    return img


def alice() -> Image.Image:
    img = gradient((180, 220, 250), (110, 170, 220))
    d = ImageDraw.Draw(img)
    d.polygon([(512, 600), (220, 1024), (804, 1024)], fill=(90, 150, 220))  # blue dress
    d.polygon([(512, 640), (360, 1024), (664, 1024)], fill=(250, 250, 250))  # pinafore
    d.ellipse([332, 220, 692, 680], fill=(246, 214, 110))  # blonde hair
    d.ellipse([402, 290, 622, 560], fill=(252, 228, 210))  # face
    d.arc([370, 250, 654, 420], 190, 350, fill=(30, 40, 90), width=22)  # black headband
    for cx in (462, 562):
        d.ellipse([cx - 22, 400, cx + 22, 446], fill=(255, 255, 255))
        d.ellipse([cx - 13, 410, cx + 13, 440], fill=(60, 110, 180))
    d.arc([482, 480, 542, 520], 20, 160, fill=(190, 80, 90), width=6)
    d.ellipse([760, 700, 900, 760], fill=(250, 250, 250))  # teacup
    d.rectangle([775, 650, 885, 730], fill=(250, 250, 250))
    d.arc([870, 660, 930, 710], 270, 90, fill=(250, 250, 250), width=12)
    d.arc([80, 120, 260, 240], 200, 340, fill=(250, 250, 250), width=14)  # a grin in the sky
    return img


def dracula() -> Image.Image:
    img = gradient((60, 10, 20), (10, 6, 12))
    d = ImageDraw.Draw(img)
    d.ellipse([660, 70, 920, 330], fill=(236, 226, 200))  # moon
    castle = [(0, 700), (80, 700), (80, 560), (130, 520), (180, 560), (180, 640), (260, 640), (260, 480),
              (300, 430), (340, 480), (340, 700), (1024, 700), (1024, 1024), (0, 1024)]
    d.polygon(castle, fill=(20, 14, 20))
    d.polygon([(512, 560), (140, 1024), (884, 1024)], fill=(10, 8, 10))  # cape
    d.polygon([(512, 600), (300, 560), (360, 760)], fill=(150, 20, 30))  # red lining of the collar
    d.polygon([(512, 600), (724, 560), (664, 760)], fill=(150, 20, 30))
    d.ellipse([412, 280, 612, 560], fill=(226, 220, 214))  # pale face
    d.polygon([(412, 360), (512, 300), (612, 360), (612, 280), (412, 280)], fill=(20, 18, 24))  # widow's peak
    for cx in (466, 558):
        d.ellipse([cx - 18, 400, cx + 18, 424], fill=(200, 20, 30))
    d.line([(480, 500), (544, 500)], fill=(120, 20, 30), width=6)
    for x in (490, 530):
        d.polygon([(x - 6, 500), (x + 6, 500), (x, 522)], fill=(255, 255, 255))  # fangs
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


def placeholder() -> Image.Image:
    """The portrait of a character that came without one."""
    img = gradient((200, 190, 220), (120, 110, 150))
    d = ImageDraw.Draw(img)
    d.ellipse([392, 300, 632, 540], fill=(70, 62, 96))
    d.chord([232, 520, 792, 1080], 180, 360, fill=(70, 62, 96))
    return img


def main() -> None:
    for rid, draw in (("sunwukong", wukong), ("sherlock", holmes), ("lindaiyu", daiyu), ("zhugeliang", zhuge),
                      ("luzhishen", luzhishen), ("elizabeth", elizabeth), ("alice", alice), ("dracula", dracula)):
        out = ROOT / rid / "image.png"
        draw().resize((512, 512), Image.LANCZOS).save(out, optimize=True)
        print("wrote", out)
    for name, draw in (("online", online), ("placeholder", placeholder)):
        out = ROOT.parent / "assets" / f"{name}.png"
        draw().resize((256, 256), Image.LANCZOS).save(out, optimize=True)
        print("wrote", out)


if __name__ == "__main__":
    main()

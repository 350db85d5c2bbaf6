"""Draw the three captioned scene pictures every bundled role ships (original art, CC-BY-4.0).

    python tools/draw_scenes.py      # rewrites characters/*/images/

Which drawing each role gets, its file name and its caption are data: tools/draw_scenes.json.
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


def moon(d, x, y, r, fill=(250, 245, 220)):
    d.ellipse([x - r, y - r, x + r, y + r], fill=fill)


def bamboo(d, x, top, bottom, color=(70, 140, 80)):
    d.rectangle([x, top, x + 18, bottom], fill=color)
    for y in range(top + 60, bottom, 90):
        d.rectangle([x - 3, y, x + 21, y + 6], fill=(50, 110, 60))
        d.polygon([(x + 18, y), (x + 90, y - 30), (x + 30, y + 12)], fill=(90, 160, 90))


def petals(d, spots, fill=(245, 170, 190)):
    for x, y, r in spots:
        d.ellipse([x - r, y - r // 2, x + r, y + r // 2], fill=fill)


# ------------------------------------------------------------------ 林黛玉


def burying_flowers():
    img, d = canvas((250, 220, 230), (200, 170, 150))
    d.rectangle([0, 470, W, H], fill=(150, 120, 90))  # the earth of the garden
    d.ellipse([380, 500, 640, 600], fill=(110, 80, 60))  # the flower grave
    d.polygon([(520, 230), (470, 470), (570, 470)], fill=(180, 200, 230))  # her robe
    d.ellipse([490, 170, 550, 230], fill=(250, 225, 205))
    d.line([(560, 330), (700, 520)], fill=(120, 80, 40), width=10)  # the hoe
    d.rectangle([690, 500, 760, 540], fill=(200, 160, 200))  # the silk bag
    petals(d, [(120, 120, 18), (260, 200, 14), (760, 150, 20), (880, 260, 16), (340, 380, 14), (660, 90, 15),
               (430, 530, 12), (560, 560, 14), (900, 420, 18), (200, 330, 12)])
    return img


def xiaoxiang_bamboo():
    img, d = canvas((200, 230, 210), (120, 170, 140))
    for x in (60, 180, 300, 760, 880, 980):
        bamboo(d, x, 40, 640)
    d.rectangle([400, 300, 700, 560], fill=(230, 220, 200))  # the lodge
    d.polygon([(370, 310), (550, 200), (730, 310)], fill=(90, 90, 100))
    d.ellipse([500, 360, 600, 460], fill=(250, 240, 200))  # a round window, lamp-lit
    d.line([(550, 360), (550, 460)], fill=(120, 100, 80), width=4)
    return img


def poetry_club():
    img, d = canvas((245, 235, 215), (220, 200, 170))
    d.rectangle([140, 380, 900, 440], fill=(120, 80, 50))  # the writing table
    d.rectangle([300, 250, 620, 380], fill=(252, 250, 240))  # a sheet of poems
    for y in range(270, 370, 20):
        d.line([(330, y), (590, y)], fill=(60, 60, 60), width=3)
    d.rectangle([680, 200, 700, 380], fill=(60, 40, 30))  # brush
    d.polygon([(680, 380), (700, 380), (690, 410)], fill=(20, 20, 20))
    d.ellipse([740, 320, 840, 370], fill=(40, 40, 50))  # ink stone
    for x, y in ((180, 200), (230, 150), (840, 150)):  # crab-apple blossoms
        d.ellipse([x - 28, y - 28, x + 28, y + 28], fill=(245, 190, 200))
        d.ellipse([x - 8, y - 8, x + 8, y + 8], fill=(250, 220, 120))
    return img


# ------------------------------------------------------------------ Elizabeth Bennet


def netherfield_ball():
    img, d = canvas((60, 40, 70), (140, 100, 90))
    for x in (200, 512, 824):  # chandeliers
        d.line([(x, 0), (x, 80)], fill=(230, 200, 120), width=4)
        d.polygon([(x - 70, 80), (x + 70, 80), (x, 150)], fill=(250, 220, 140))
    d.rectangle([0, 500, W, H], fill=(120, 80, 50))  # the floor
    d.polygon([(360, 280), (300, 520), (440, 520)], fill=(240, 235, 220))  # her gown
    d.ellipse([345, 220, 395, 270], fill=(245, 220, 200))
    d.rectangle([600, 270, 660, 520], fill=(25, 25, 35))  # his dark coat
    d.ellipse([605, 210, 655, 260], fill=(240, 215, 195))
    d.line([(430, 360), (600, 340)], fill=(245, 220, 200), width=8)  # a hand offered for the dance
    return img


def pemberley():
    img, d = canvas((170, 205, 235), (120, 170, 110))
    d.rectangle([0, 430, W, H], fill=(90, 140, 80))
    d.ellipse([-100, 470, 1124, 700], fill=(110, 160, 200))  # the lake before the house
    d.rectangle([300, 220, 724, 430], fill=(225, 205, 170))  # Pemberley's stone front
    d.polygon([(460, 220), (512, 160), (564, 220)], fill=(200, 180, 150))
    for x in range(330, 700, 56):
        d.rectangle([x, 260, x + 26, 310], fill=(90, 110, 140))
        d.rectangle([x, 340, x + 26, 400], fill=(90, 110, 140))
    for x, r in ((120, 90), (900, 110)):
        d.ellipse([x - r, 330 - r, x + r, 330 + r], fill=(60, 120, 60))
    return img


def the_letter():
    img, d = canvas((230, 220, 200), (180, 160, 130))
    d.polygon([(260, 120), (760, 150), (740, 560), (240, 530)], fill=(250, 246, 232))  # the letter
    for i in range(9):
        y = 190 + i * 36
        d.line([(300, y), (700, y + 4)], fill=(70, 60, 80), width=3)
    d.text((560, 500), "F.D.", fill=(70, 60, 80))
    d.ellipse([800, 380, 900, 480], fill=(170, 40, 40))  # the broken seal
    d.line([(820, 400), (880, 460)], fill=(120, 20, 20), width=6)
    return img


# ------------------------------------------------------------------ 诸葛亮


def empty_city():
    img, d = canvas((240, 210, 160), (200, 160, 110))
    d.rectangle([0, 330, W, H], fill=(150, 120, 90))  # the city wall
    for x in range(0, W, 80):
        d.rectangle([x, 290, x + 50, 330], fill=(150, 120, 90))
    d.rectangle([420, 450, 604, 640], fill=(60, 40, 30))  # the open gate
    d.rectangle([400, 250, 620, 330], fill=(180, 60, 50))  # the tower
    d.polygon([(380, 250), (510, 190), (640, 250)], fill=(60, 60, 70))
    d.rectangle([470, 210, 550, 250], fill=(240, 230, 210))  # the strategist at his zither
    d.rectangle([440, 240, 580, 256], fill=(110, 70, 40))
    for x in (150, 860):  # a few sweepers, unafraid
        d.ellipse([x - 20, 560, x + 20, 600], fill=(80, 70, 60))
    return img


def straw_boats():
    img, d = canvas((200, 205, 215), (150, 160, 175))
    fog = Image.new("RGB", (W, H), (225, 228, 232))
    d.rectangle([0, 420, W, H], fill=(90, 110, 130))  # the river
    for x in (120, 430, 740):
        d.polygon([(x, 440), (x + 220, 440), (x + 180, 500), (x + 40, 500)], fill=(110, 80, 50))
        d.rectangle([x + 50, 330, x + 170, 440], fill=(210, 180, 110))  # straw bundles
        for i in range(9):  # arrows caught in the straw
            y = 340 + i * 11
            d.line([(x + 60 + (i % 3) * 30, y), (x + 10 + (i % 3) * 30, y - 14)], fill=(60, 50, 40), width=3)
    return Image.blend(img, fog, 0.3)


def east_wind():
    img, d = canvas((60, 70, 110), (140, 120, 150))
    moon(d, 820, 120, 60)
    d.polygon([(360, 640), (420, 400), (600, 400), (660, 640)], fill=(110, 90, 70))  # the altar
    d.rectangle([470, 250, 550, 400], fill=(235, 235, 240))  # his white robe
    d.ellipse([485, 200, 535, 250], fill=(240, 220, 200))
    d.polygon([(560, 260), (640, 200), (650, 280)], fill=(250, 250, 250))  # the feather fan
    for y in (150, 230, 310):  # the wind from the east
        d.arc([40, y, 300, y + 80], 180, 360, fill=(220, 230, 250), width=8)
    for x in (380, 640):  # banners
        d.line([(x, 400), (x, 250)], fill=(80, 60, 40), width=6)
        d.polygon([(x, 250), (x + 70, 270), (x, 300)], fill=(200, 60, 50))
    return img


# ------------------------------------------------------------------ Alice


def rabbit_hole():
    img, d = canvas((150, 200, 120), (100, 150, 80))
    d.ellipse([320, 300, 700, 620], fill=(40, 30, 25))  # the hole under the hedge
    d.ellipse([370, 340, 650, 580], fill=(15, 10, 10))
    d.ellipse([720, 260, 820, 400], fill=(250, 250, 250))  # the White Rabbit
    d.ellipse([740, 190, 770, 280], fill=(250, 250, 250))
    d.ellipse([780, 190, 810, 280], fill=(250, 250, 250))
    d.rectangle([730, 320, 810, 390], fill=(200, 60, 60))  # his waistcoat
    d.ellipse([690, 330, 740, 380], fill=(230, 200, 80))  # the pocket watch
    d.line([(715, 355), (715, 340)], fill=(40, 40, 40), width=3)
    return img


def tea_party():
    img, d = canvas((240, 220, 240), (190, 210, 170))
    d.rectangle([100, 360, 924, 420], fill=(250, 250, 250))  # the long table
    for x in (140, 300, 460, 620, 780):
        d.rectangle([x, 300, x + 60, 360], fill=(120, 170, 210))  # teacups
        d.arc([x + 50, 310, x + 80, 345], 270, 90, fill=(120, 170, 210), width=6)
    d.polygon([(820, 140), (900, 140), (930, 260), (790, 260)], fill=(90, 60, 120))  # the Hatter's hat
    d.rectangle([780, 250, 940, 270], fill=(90, 60, 120))
    d.rectangle([836, 200, 884, 220], fill=(250, 250, 250))  # 10/6
    d.ellipse([200, 200, 280, 280], fill=(200, 150, 90))  # the Dormouse, asleep in a teapot
    d.rectangle([180, 250, 300, 330], fill=(240, 200, 220))
    return img


def croquet():
    img, d = canvas((170, 210, 130), (90, 160, 80))
    for i, x in enumerate((160, 360, 560, 760)):  # card soldiers bent into hoops
        d.rectangle([x, 330, x + 90, 480], fill=(250, 250, 250))
        d.polygon([(x + 45, 360), (x + 25, 400), (x + 45, 440), (x + 65, 400)],
                  fill=(200, 40, 40) if i % 2 else (30, 30, 30))
    d.line([(860, 500), (930, 260)], fill=(245, 120, 150), width=16)  # a flamingo mallet
    d.ellipse([910, 220, 960, 270], fill=(245, 120, 150))
    d.ellipse([780, 520, 850, 570], fill=(140, 120, 110))  # the hedgehog ball
    d.polygon([(60, 120), (100, 60), (140, 120), (120, 90), (100, 120), (80, 90)], fill=(230, 190, 40))  # a crown
    return img


# ------------------------------------------------------------------ 鲁智深


def willow():
    img, d = canvas((200, 225, 240), (170, 200, 140))
    d.rectangle([0, 480, W, H], fill=(130, 150, 90))
    d.line([(420, 520), (700, 140)], fill=(110, 80, 50), width=46)  # the willow, pulled out by the roots
    for x, y in ((700, 140), (660, 200), (740, 180)):
        for k in range(5):
            d.line([(x, y), (x - 60 + k * 30, y + 170)], fill=(120, 170, 80), width=5)
    for k in range(6):  # the roots in the air
        d.line([(420, 520), (330 + k * 30, 600 - (k % 2) * 40)], fill=(100, 70, 40), width=10)
    d.ellipse([200, 330, 300, 430], fill=(230, 190, 160))  # the monk's bald head
    d.rectangle([180, 430, 320, 560], fill=(150, 70, 40))
    return img


def butcher_shop():
    img, d = canvas((220, 190, 160), (170, 130, 100))
    d.rectangle([120, 140, 900, 180], fill=(100, 60, 40))  # the shop's beam
    for x in (200, 340, 480):  # hooks of meat
        d.line([(x, 180), (x, 240)], fill=(80, 80, 80), width=4)
        d.ellipse([x - 40, 240, x + 40, 360], fill=(200, 90, 90))
    d.rectangle([120, 440, 900, 500], fill=(120, 80, 50))  # the block
    d.ellipse([640, 240, 720, 320], fill=(230, 190, 160))
    d.rectangle([620, 320, 740, 440], fill=(150, 70, 40))
    d.ellipse([750, 280, 810, 340], fill=(230, 190, 160))  # a fist, three blows coming
    for r in (50, 80):
        d.arc([780 - r, 310 - r, 780 + r, 310 + r], 300, 60, fill=(250, 240, 200), width=5)
    return img


def monk_staff():
    img, d = canvas((250, 220, 160), (200, 150, 100))
    d.rectangle([260, 250, 760, 560], fill=(190, 60, 40))  # the temple hall
    d.polygon([(220, 260), (512, 120), (800, 260)], fill=(70, 70, 80))
    d.rectangle([460, 380, 560, 560], fill=(90, 40, 30))
    d.line([(860, 600), (860, 160)], fill=(90, 90, 100), width=18)  # the sixty-two-jin staff
    d.polygon([(820, 160), (900, 160), (860, 110)], fill=(200, 200, 210))
    d.arc([820, 200, 900, 280], 0, 360, fill=(200, 200, 210), width=6)
    for x in (80, 150):  # prayer beads
        d.ellipse([x, 420, x + 30, 450], fill=(110, 70, 40))
    return img


# ------------------------------------------------------------------ Count Dracula


def castle():
    img, d = canvas((40, 30, 60), (110, 60, 80))
    moon(d, 780, 140, 80)
    d.polygon([(0, 640), (200, 360), (420, 400), (600, 330), (1024, 640)], fill=(30, 25, 35))  # the crag
    d.rectangle([300, 200, 520, 400], fill=(20, 18, 28))
    for x in (280, 460):
        d.rectangle([x, 140, x + 70, 400], fill=(20, 18, 28))
        d.polygon([(x - 10, 140), (x + 35, 70), (x + 80, 140)], fill=(20, 18, 28))
    d.rectangle([395, 280, 420, 320], fill=(250, 200, 90))  # one lit window
    for x, y in ((650, 260), (720, 220), (600, 190)):  # bats
        d.polygon([(x - 26, y), (x - 10, y - 10), (x, y + 4), (x + 10, y - 10), (x + 26, y), (x, y + 10)],
                  fill=(10, 10, 15))
    return img


def crypt():
    img, d = canvas((50, 45, 55), (25, 22, 28))
    d.rectangle([0, 480, W, H], fill=(40, 36, 40))
    d.polygon([(300, 380), (720, 380), (760, 470), (260, 470)], fill=(70, 45, 35))  # the box of earth
    d.rectangle([260, 470, 760, 520], fill=(50, 32, 25))
    d.ellipse([240, 140, 300, 200], fill=(250, 200, 90))  # candles
    d.rectangle([262, 200, 278, 330], fill=(230, 225, 210))
    d.ellipse([720, 140, 780, 200], fill=(250, 200, 90))
    d.rectangle([742, 200, 758, 330], fill=(230, 225, 210))
    return img


def whitby_ship():
    img, d = canvas((60, 70, 90), (30, 35, 50))
    d.polygon([(0, 460), (200, 420), (420, 470), (640, 410), (860, 460), (1024, 430), (1024, 640), (0, 640)],
              fill=(30, 50, 70))  # the storm sea
    d.polygon([(300, 430), (720, 430), (660, 500), (360, 500)], fill=(60, 40, 30))  # the Demeter
    d.line([(510, 430), (510, 170)], fill=(60, 40, 30), width=10)
    d.polygon([(515, 190), (650, 300), (515, 330)], fill=(180, 175, 160))  # torn sail
    d.polygon([(860, 470), (940, 360), (1000, 470)], fill=(20, 20, 25))  # the abbey cliff
    d.ellipse([160, 540, 240, 600], fill=(15, 15, 18))  # a great dog leaping ashore
    d.line([(60, 80), (140, 200), (110, 200), (190, 320)], fill=(230, 230, 250), width=5)  # lightning
    return img


def main() -> None:
    scenes = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
    for rid, pictures in scenes.items():
        folder = ROOT / rid / "images"
        folder.mkdir(exist_ok=True)
        rows = []
        for picture in pictures:
            draw = globals()[picture["draw"]]
            draw().resize((512, 320), Image.LANCZOS).save(folder / picture["file"], optimize=True)
            rows.append({"file": picture["file"], "caption": picture["caption"]})
        (folder / "images.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print("wrote", folder)


if __name__ == "__main__":
    main()

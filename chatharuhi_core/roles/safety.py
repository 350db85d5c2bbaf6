"""Guards for files that visitors bring: sizes, zips, links, images and text encodings.

Everything a visitor uploads is untrusted. These checks run before anything is parsed or
written, and each failure is an ImportProblem whose message names the file and the problem.
Extraction only ever writes inside a folder the caller chose under the cache directory.
"""

from __future__ import annotations

import io
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import ImportProblem
from ..i18n import _

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much an import may read. Generous for real roles, fatal for bombs."""

    max_file_bytes: int = 100 * MB  # one uploaded file, or one file inside a zip
    max_zip_total_bytes: int = 300 * MB  # everything a zip unpacks to
    max_zip_entries: int = 5000
    max_zip_ratio: int = 200  # uncompressed / compressed, per entry
    max_image_pixels: int = 4096 * 4096
    max_scenes: int = 100_000


DEFAULT_LIMITS = Limits()


def _size_text(n: int) -> str:
    return _("{size} MB", size=format(n / MB, ".1f")) if n >= MB else _("{count} bytes", count=format(n, ","))


def check_file(path: Path, limits: Limits = DEFAULT_LIMITS, name: str | None = None) -> int:
    """A plain file, not a link, not too big. Returns its size."""
    name = name or path.name
    if path.is_symlink():
        raise ImportProblem(_("{name} is a link; links are not accepted, send the file itself.", name=name))
    if not path.is_file():
        raise ImportProblem(_("{name} is not a file.", name=name))
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise ImportProblem(
            _("{name} is {size}; files are limited to {limit}.", name=name, size=_size_text(size),
              limit=_size_text(limits.max_file_bytes))
        )
    return size


def read_bytes(path: Path, limits: Limits = DEFAULT_LIMITS, name: str | None = None) -> bytes:
    check_file(path, limits, name)
    return path.read_bytes()


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (a byte-order mark is allowed); anything else is refused with the byte offset."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportProblem(
            _("{name} is not UTF-8 text (invalid byte at offset {offset}). Save it as UTF-8 and try again.",
              name=name, offset=exc.start)
        ) from None
    if "\x00" in text:
        raise ImportProblem(_("{name} contains NUL bytes; it looks like a binary file, not text.", name=name))
    return text


def read_text(path: Path, limits: Limits = DEFAULT_LIMITS, name: str | None = None) -> str:
    name = name or path.name
    return decode_text(read_bytes(path, limits, name), name)


def check_tree(root: Path, limits: Limits = DEFAULT_LIMITS) -> None:
    """A role folder from outside: no links anywhere, no oversized files."""
    for p in [root, *root.rglob("*")]:
        rel = p.relative_to(root).as_posix() or root.name
        if p.is_symlink():
            raise ImportProblem(_("{name} is a link; role folders may not contain links.", name=rel))
        if p.is_file():
            check_file(p, limits, rel)


def _entry_problem(info: zipfile.ZipInfo, limits: Limits) -> str | None:
    name = info.filename
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return _("has an absolute path")
    if ".." in pure.parts:
        return _("would be written outside the target folder ('..' in its path)")
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return _("is a symbolic link")
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # type bits are often absent
        return _("is not a plain file")
    if info.file_size > limits.max_file_bytes:
        return _("unpacks to {size} (limit {limit})", size=_size_text(info.file_size),
                 limit=_size_text(limits.max_file_bytes))
    if info.compress_size and info.file_size / info.compress_size > limits.max_zip_ratio and info.file_size > MB:
        return _("is compressed {ratio}:1, which looks like a zip bomb",
                 ratio=info.file_size // max(info.compress_size, 1))
    return None


UTF8_FLAG = 0x800  # general purpose bit 11: the entry's name is UTF-8
UNICODE_PATH_FIELD = 0x7075  # Info-ZIP's extra field: a UTF-8 copy of the name, with the CRC of the stored one


def _unicode_path(info: zipfile.ZipInfo, stored: bytes) -> str | None:
    """The UTF-8 name Info-ZIP's extra field carries, when it was written for this very name (its CRC matches)."""
    extra, at = info.extra, 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack("<HH", extra[at:at + 4])
        body = extra[at + 4:at + 4 + size]
        at += 4 + size
        if kind == UNICODE_PATH_FIELD and len(body) > 5 and body[0] == 1 \
                and struct.unpack("<I", body[1:5])[0] == zlib.crc32(stored):
            try:
                return body[5:].decode("utf-8")
            except UnicodeDecodeError:
                return None
    return None


def entry_name(info: zipfile.ZipInfo) -> str:
    """An entry's name as the archiver that wrote it meant it. Without the UTF-8 flag, zipfile reads the bytes as
    cp437 (the format's old default), but macOS's Archive Utility, Linux's `zip` and many tools store UTF-8 there
    without setting the flag, and Chinese Windows stores GBK: "场景" came out as "σ£║µÖ»". So: Info-ZIP's UTF-8
    copy of the name if it has one, else the bytes read as UTF-8, else as GBK, else as cp437."""
    if info.flag_bits & UTF8_FLAG:
        return info.filename
    try:
        stored = info.orig_filename.encode("cp437")
    except UnicodeEncodeError:  # not a name zipfile read as cp437
        return info.filename
    named = _unicode_path(info, stored)
    if named is not None:
        return named
    if stored.isascii():
        return info.filename
    for encoding in ("utf-8", "gbk"):
        try:
            return stored.decode(encoding)
        except UnicodeDecodeError:
            continue
    return info.filename


def safe_extract_zip(zip_path: Path, target: Path, limits: Limits = DEFAULT_LIMITS, name: str | None = None) -> Path:
    """Unpack a zip into target after checking every entry; nothing is written on a problem."""
    name = name or zip_path.name
    check_file(zip_path, limits, name)
    try:
        zf = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError):
        raise ImportProblem(_("{name} is not a readable zip file.", name=name)) from None
    with zf:
        infos = zf.infolist()
        for info in infos:  # the names to check and write (zf.open still matches the stored one, orig_filename)
            info.filename = entry_name(info)
        if len(infos) > limits.max_zip_entries:
            raise ImportProblem(_("{name} holds {count} entries; the limit is {limit}.", name=name,
                                   count=format(len(infos), ","), limit=format(limits.max_zip_entries, ",")))
        total = 0
        for info in infos:
            problem = _entry_problem(info, limits)
            if problem:
                raise ImportProblem(_("{name}: the entry '{entry}' {problem}; nothing was unpacked.", name=name,
                                       entry=info.filename, problem=problem))
            total += info.file_size
        if total > limits.max_zip_total_bytes:
            raise ImportProblem(
                _("{name} unpacks to {size}; the limit is {limit}.", name=name, size=_size_text(total),
                  limit=_size_text(limits.max_zip_total_bytes))
            )
        target.mkdir(parents=True, exist_ok=True)
        root = target.resolve()
        for info in infos:
            dest = (target / info.filename.replace("\\", "/")).resolve()
            if root != dest and root not in dest.parents:  # belt and braces after the checks above
                raise ImportProblem(_("{name}: the entry '{entry}' escapes the target folder.", name=name,
                                       entry=info.filename))
            if info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            written = 0
            with zf.open(info) as src, dest.open("wb") as out:
                while chunk := src.read(MB):
                    written += len(chunk)
                    if written > limits.max_file_bytes:  # sizes in the header can lie
                        raise ImportProblem(_("{name}: the entry '{entry}' is larger than it claims.", name=name,
                                                   entry=info.filename))
                    out.write(chunk)
    return target


# ------------------------------------------------------------------ images

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the header alone, before any pixel is decoded."""
    if data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:  # lazy: reads the header only
            return im.size
    except (UnidentifiedImageError, OSError, ValueError):
        return None
    except Image.DecompressionBombError:
        return (1 << 20, 1 << 20)


def load_image(data: bytes, name: str, limits: Limits = DEFAULT_LIMITS, max_side: int = 768):
    """A portrait as a PIL image, checked for decompression bombs, scaled to max_side."""
    from PIL import Image, UnidentifiedImageError

    size = image_size(data)
    if size is None:
        raise ImportProblem(_("{name} is not an image this app can read (PNG, JPEG or WebP).", name=name))
    w, h = size
    if w * h > limits.max_image_pixels:
        raise ImportProblem(
            _("{name} claims to be {width}×{height} pixels, more than the {limit} allowed; it may be a "
              "decompression bomb. Send a smaller picture.", name=name, width=format(w, ","), height=format(h, ","),
              limit=format(limits.max_image_pixels, ","))
        )
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            img = im.convert("RGBA" if im.mode in ("RGBA", "LA", "P") else "RGB")
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        raise ImportProblem(_("{name} is a damaged image.", name=name)) from None
    img.thumbnail((max_side, max_side))
    return img

"""A tiny pure-Python PNG bar chart (zlib + struct; matplotlib is not a dependency of this project).

:class:`Canvas` fills rectangles and writes upper-case text in a 3x5 bitmap font;
:func:`bar_panel` draws one titled panel of bars with optional min/max whiskers and a dashed
target line; :meth:`Canvas.save` writes an 8-bit RGB PNG.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

Color = tuple[int, int, int]
WHITE, BLACK, GREY, RED = (255, 255, 255), (30, 30, 30), (200, 200, 200), (210, 40, 40)
PALETTE = [(66, 133, 244), (251, 188, 5), (52, 168, 83), (171, 71, 188), (255, 112, 67), (0, 172, 193)]

# 3x5 glyphs, rows top to bottom, 3 bits each (4 = left pixel).
_FONT = {
    "0": "75557", "1": "26227", "2": "71747", "3": "71317", "4": "55711", "5": "74717", "6": "74757",
    "7": "71111", "8": "75757", "9": "75717", "A": "25755", "B": "65656", "C": "34443", "D": "65556",
    "E": "74647", "F": "74644", "G": "34553", "H": "55755", "I": "72227", "J": "11152", "K": "55655",
    "L": "44447", "M": "57755", "N": "65555", "O": "25552", "P": "65644", "Q": "25573", "R": "65655",
    "S": "34216", "T": "72222", "U": "55557", "V": "55552", "W": "55775", "X": "55255", "Y": "55222",
    "Z": "71247", " ": "00000", ".": "00002", ",": "00024", "-": "00700", "/": "11244", "%": "51245",
    ":": "02020", "(": "24442", ")": "42224", "=": "07070", "<": "12421", ">": "42124", "+": "02720",
    "_": "00007", "*": "05250", "?": "71202",
}


class Canvas:
    def __init__(self, width: int, height: int, background: Color = WHITE) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(bytes(background) * (width * height))

    def rect(self, x0: float, y0: float, x1: float, y1: float, color: Color) -> None:
        xa, xb = sorted((max(0, int(x0)), min(self.width, int(x1))))
        ya, yb = sorted((max(0, int(y0)), min(self.height, int(y1))))
        row = bytes(color) * (xb - xa)
        for y in range(ya, yb):
            start = (y * self.width + xa) * 3
            self.pixels[start:start + len(row)] = row

    def text(self, x: float, y: float, text: str, color: Color = BLACK, scale: int = 2) -> None:
        for i, char in enumerate(text.upper()):
            glyph = _FONT.get(char, _FONT["?"])
            for row, bits in enumerate(glyph):
                for col in range(3):
                    if int(bits) & (4 >> col):
                        px, py = x + (i * 4 + col) * scale, y + row * scale
                        self.rect(px, py, px + scale, py + scale, color)

    @staticmethod
    def text_width(text: str, scale: int = 2) -> int:
        return len(text) * 4 * scale

    def save(self, path: Path) -> None:
        stride = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride:(y + 1) * stride]) for y in range(self.height))

        def chunk(tag: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))
                         + chunk(b"IEND", b""))


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def bar_panel(canvas: Canvas, x: int, y: int, width: int, height: int, title: str,
              bars: Sequence[tuple[str, float | None, float | None, float | None]], *,
              target: float | None = None, target_label: str = "TARGET") -> None:
    """Bars ``(label, value, low, high)`` (low/high: whisker, may be None) in the box (x, y, width, height)."""
    canvas.rect(x, y, x + width, y + height, (248, 248, 248))
    canvas.text(x + 8, y + 8, title, BLACK, 2)
    top, bottom = y + 34, y + height - 34
    values = [v for _, v, lo, hi in bars for v in (v, hi) if v is not None]
    peak = max([*values, target or 0, 1e-9]) * 1.15
    slot = (width - 20) / max(1, len(bars))
    canvas.rect(x + 10, bottom, x + width - 10, bottom + 2, BLACK)
    for i, (label, value, low, high) in enumerate(bars):
        left = x + 10 + i * slot + slot * 0.2
        right = left + slot * 0.6
        color = PALETTE[i % len(PALETTE)]
        if value is None:
            canvas.text(left, bottom - 14, "N/A", GREY, 2)
        else:
            height_px = (bottom - top) * value / peak
            canvas.rect(left, bottom - height_px, right, bottom, color)
            label_y = bottom - (bottom - top) * max(value, high or 0) / peak - 14
            canvas.text(left, label_y, _fmt(value), BLACK, 2)
            if low is not None and high is not None:
                middle = (left + right) / 2
                y_low, y_high = bottom - (bottom - top) * low / peak, bottom - (bottom - top) * high / peak
                canvas.rect(middle - 1, y_high, middle + 1, y_low, BLACK)
                canvas.rect(middle - 6, y_high, middle + 6, y_high + 2, BLACK)
                canvas.rect(middle - 6, y_low - 2, middle + 6, y_low, BLACK)
        scale = 2 if Canvas.text_width(label, 2) <= slot else 1
        canvas.text(left + (right - left - Canvas.text_width(label, scale)) / 2, bottom + 8, label, BLACK, scale)
    if target is not None:
        ty = bottom - (bottom - top) * target / peak
        for dash in range(int(x + 10), int(x + width - 10), 14):
            canvas.rect(dash, ty - 1, dash + 8, ty + 1, RED)
        canvas.text(x + width - 10 - Canvas.text_width(target_label, 1) - 2, ty - 8, target_label, RED, 1)

#!/usr/bin/env python3
"""Draws the app icon, a white "Z" on an indigo rounded square, in every size the app and the
Debian bundle use, all 8-bit RGBA PNG from the one drawing below:

- icons/icon.png (512x512): the window icon (the first PNG in tauri.conf.json's bundle.icon);
- icons/16x16.png, 32x32.png, 64x64.png, 128x128.png and 256x256.png: the Debian bundler installs
  each as /usr/share/icons/hicolor/<W>x<H>/apps/zibby-studio.png (no "@2x" names: the bundler
  would make a "256x256@2" folder of one, which is not the size it holds).

Standard library only (zlib + struct). Shapes are drawn as signed distance fields at 512x512, so the
edges are anti-aliased without supersampling; each smaller size is the previous one halved by
averaging 2x2 blocks (with premultiplied alpha). Run from anywhere: python3 icons/make_icon.py
"""

import math
import os
import struct
import zlib

SIZE = 512
MARGIN = 20
RADIUS = 112
TOP = (0x63, 0x66, 0xF1)  # indigo-500
BOTTOM = (0x3B, 0x2F, 0xC9)  # between indigo-700 and blue
GLYPH = (0xFF, 0xFF, 0xFF)

# The "Z" as one polygon (clockwise), in pixels.
L, R, T, B = 154, 358, 128, 384
BAR = 60  # height of the two bars
SLANT = 100  # horizontal width of the diagonal where it meets a bar
Z_POLYGON = [
    (L, T),
    (R, T),
    (R, T + BAR),
    (L + SLANT, B - BAR),
    (R, B - BAR),
    (R, B),
    (L, B),
    (L, B - BAR),
    (R - SLANT, T + BAR),
    (L, T + BAR),
]
Z_ROUNDING = 6


def rounded_square_distance(x, y):
    """Signed distance to the rounded square (negative inside)."""
    half = (SIZE - 2 * MARGIN) / 2
    cx = cy = SIZE / 2
    qx = abs(x - cx) - (half - RADIUS)
    qy = abs(y - cy) - (half - RADIUS)
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    inside = min(max(qx, qy), 0.0)
    return outside + inside - RADIUS


def polygon_distance(x, y, points):
    """Signed distance to a simple polygon (negative inside)."""
    best = float("inf")
    sign = 1.0
    n = len(points)
    for i in range(n):
        ax, ay = points[i]
        bx, by = points[i - 1]
        ex, ey = bx - ax, by - ay
        wx, wy = x - ax, y - ay
        t = max(0.0, min(1.0, (wx * ex + wy * ey) / (ex * ex + ey * ey)))
        dx, dy = wx - ex * t, wy - ey * t
        best = min(best, dx * dx + dy * dy)
        # Winding test (even-odd) for the sign.
        c1 = ay <= y
        c2 = by > y
        c3 = ex * wy > ey * wx
        if (c1 and c2 and c3) or (not c1 and not c2 and not c3):
            sign = -sign
    return sign * math.sqrt(best)


def coverage(distance):
    return max(0.0, min(1.0, 0.5 - distance))


def shrink(points, by):
    """Moves each vertex inward along its angle bisector, so that distance - by rounds corners."""
    n = len(points)
    out = []
    for i in range(n):
        px, py = points[i - 1]
        cx, cy = points[i]
        nx, ny = points[(i + 1) % n]
        # Inward normals of the two edges (clockwise polygon in y-down coordinates).
        def normal(ax, ay, bx, by_):
            ex, ey = bx - ax, by_ - ay
            length = math.hypot(ex, ey)
            return (-ey / length, ex / length)

        n1 = normal(px, py, cx, cy)
        n2 = normal(cx, cy, nx, ny)
        bx, by_ = n1[0] + n2[0], n1[1] + n2[1]
        cos_half = (1 + n1[0] * n2[0] + n1[1] * n2[1]) / 2
        scale = by / max(cos_half, 1e-6)
        out.append((cx + bx / 2 * scale, cy + by_ / 2 * scale))
    return out


def halve(raw, size):
    """Halves an RGBA image (PNG rows with a leading filter byte) by averaging 2x2 blocks."""
    stride = 1 + 4 * size
    half = size // 2
    rows = []
    for y in range(half):
        r0 = raw[2 * y * stride + 1 : (2 * y + 1) * stride]
        r1 = raw[(2 * y + 1) * stride + 1 : (2 * y + 2) * stride]
        row = bytearray([0])
        for x in range(half):
            o = 8 * x
            px = [r0[o : o + 4], r0[o + 4 : o + 8], r1[o : o + 4], r1[o + 4 : o + 8]]
            alpha = sum(p[3] for p in px)
            if alpha == 0:
                row += b"\0\0\0\0"
                continue
            rgb = [round(sum(p[i] * p[3] for p in px) / alpha) for i in range(3)]
            row += bytes(rgb + [round(alpha / 4)])
        rows.append(bytes(row))
    return b"".join(rows)


def render():
    glyph = shrink(Z_POLYGON, Z_ROUNDING)
    rows = []
    for y in range(SIZE):
        row = bytearray([0])  # PNG filter type: none
        t = y / (SIZE - 1)
        bg = [round(TOP[i] + (BOTTOM[i] - TOP[i]) * t) for i in range(3)]
        for x in range(SIZE):
            px = x + 0.5
            py = y + 0.5
            shape = coverage(rounded_square_distance(px, py))
            if shape == 0.0:
                row += b"\0\0\0\0"
                continue
            z = 0.0
            if L - 4 <= px <= R + 4 and T - 4 <= py <= B + 4:
                z = coverage(polygon_distance(px, py, glyph) - Z_ROUNDING)
            rgb = [round(bg[i] * (1 - z) + GLYPH[i] * z) for i in range(3)]
            row += bytes(rgb + [round(255 * shape)])
        rows.append(bytes(row))
    return b"".join(rows)


def png(width, height, raw):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


# File name for each size; 512 first, each next one half of the one before.
OUTPUTS = [
    (512, "icon.png"),
    (256, "256x256.png"),
    (128, "128x128.png"),
    (64, "64x64.png"),
    (32, "32x32.png"),
    (16, "16x16.png"),
]

if __name__ == "__main__":
    folder = os.path.dirname(os.path.abspath(__file__))
    raw, size = render(), SIZE
    for want, name in OUTPUTS:
        while size > want:
            raw, size = halve(raw, size), size // 2
        assert size == want, (size, want)
        out = os.path.join(folder, name)
        with open(out, "wb") as f:
            f.write(png(size, size, raw))
        print(f"wrote {out} ({size}x{size})")

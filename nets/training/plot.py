"""Loss curves as a PNG with no plotting library: a pure-numpy raster and a zlib/struct PNG writer.

Left panel: policy loss, right panel: value loss; training (blue) and validation (red) against
the step. Axes are scaled to the data; the plot is for eyeballing trends, numbers are in the log.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

PANEL_W, PANEL_H, MARGIN = 400, 260, 12
TRAIN_RGB, VAL_RGB, AXIS_RGB = (40, 90, 200), (210, 40, 40), (120, 120, 120)


def write_png(path: str | Path, rgb: np.ndarray) -> None:
    """Write uint8 [H, W, 3] as an 8-bit RGB PNG."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))  # filter type 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    Path(path).write_bytes(png)


def _line(img: np.ndarray, xs: np.ndarray, ys: np.ndarray, color) -> None:
    """Draw a polyline (pixel coordinates) by dense sampling of each segment."""
    for x0, y0, x1, y1 in zip(xs[:-1], ys[:-1], xs[1:], ys[1:]):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        t = np.linspace(0, 1, n + 1)
        px = np.clip(np.round(x0 + t * (x1 - x0)).astype(int), 0, img.shape[1] - 1)
        py = np.clip(np.round(y0 + t * (y1 - y0)).astype(int), 0, img.shape[0] - 1)
        img[py, px] = color
    if len(xs) == 1:
        img[int(ys[0]), int(xs[0])] = color


def _panel(series: list[tuple[np.ndarray, np.ndarray, tuple]]) -> np.ndarray:
    img = np.full((PANEL_H, PANEL_W, 3), 255, np.uint8)
    img[MARGIN:PANEL_H - MARGIN, MARGIN] = AXIS_RGB
    img[PANEL_H - MARGIN, MARGIN:PANEL_W - MARGIN] = AXIS_RGB
    pts = [(x, y) for x, y, _ in series if len(x)]
    if not pts:
        return img
    allx = np.concatenate([x for x, _ in pts])
    ally = np.concatenate([y for _, y in pts])
    x_lo, x_hi = allx.min(), max(allx.max(), allx.min() + 1)
    y_lo, y_hi = ally.min(), max(ally.max(), ally.min() + 1e-6)
    for x, y, color in series:
        if len(x):
            px = MARGIN + 1 + (x - x_lo) / (x_hi - x_lo) * (PANEL_W - 2 * MARGIN - 2)
            py = PANEL_H - MARGIN - 1 - (y - y_lo) / (y_hi - y_lo) * (PANEL_H - 2 * MARGIN - 2)
            _line(img, px, py, color)
    return img


def write_loss_png(path: str | Path, history: dict) -> None:
    """history: {"train": [[step, policy, value, acc], ...], "val": [...]} -> two-panel PNG."""
    train = np.array(history.get("train") or np.zeros((0, 4)), np.float64).reshape(-1, 4)
    val = np.array(history.get("val") or np.zeros((0, 4)), np.float64).reshape(-1, 4)
    panels = [_panel([(train[:, 0], train[:, col], TRAIN_RGB), (val[:, 0], val[:, col], VAL_RGB)])
              for col in (1, 2)]
    write_png(path, np.concatenate(panels, axis=1))

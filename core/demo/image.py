"""Grayscale images in and out, with no imaging library: PGM (P5) to read
the bundled image, PNG to write results anyone can open."""
from __future__ import annotations

import struct
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

BUNDLED_IMAGE = "shapes.pgm"


def read_pgm(data: bytes) -> np.ndarray:
    """An 8-bit binary PGM as a float32 array in [0, 1]."""
    fields, offset = [], 0
    while len(fields) < 4:
        while data[offset:offset + 1].isspace():
            offset += 1
        if data[offset:offset + 1] == b"#":
            offset = data.index(b"\n", offset)
            continue
        end = offset
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[offset:end])
        offset = end
    magic, width, height, maximum = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    if magic != b"P5" or maximum > 255:
        raise ValueError("only 8-bit binary PGM (P5) images are supported")
    pixels = np.frombuffer(data, np.uint8, width * height, offset + 1)
    return (pixels.reshape(height, width) / np.float32(maximum)).astype(np.float32)


def bundled_image() -> np.ndarray:
    """The demo's input image."""
    return read_pgm(resources.files(__package__).joinpath("data", BUNDLED_IMAGE).read_bytes())


def png_bytes(image: np.ndarray) -> bytes:
    """``image`` (values in [0, 1]) as an 8-bit grayscale PNG."""
    pixels = (np.clip(image, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)
    height, width = pixels.shape
    rows = b"".join(b"\x00" + pixels[y].tobytes() for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def write_png(path: str | Path, image: np.ndarray) -> Path:
    path = Path(path)
    path.write_bytes(png_bytes(image))
    return path

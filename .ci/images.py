"""The image files the end-to-end checks read through toolport, and the check of what comes
back, both with Pillow (pinned in .ci/frameworks/requirements.txt): an image library nobody
here wrote, the one most model APIs' Python stacks decode with.

    python images.py DIR     # writes the files below into DIR

- `shot.png`: a 4000x3000 screenshot (flat bands, lines of text), PNG;
- `photo.jpg`: a 12-megapixel (4000x3000) photo-like JPEG;
- `cut.png`: a PNG cut short in its image data (a partial download);
- `garbage.jpg`: a JPEG's first bytes, then bytes that are no JPEG.

Used by `.ci/run` (through the MCP Inspector, `e2e_check.py downscaled`) and by
`.ci/frameworks/check.py` (through the MCP Python SDK).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

#: The size of the large images: a 4K-class screenshot, and 12 megapixels.
WIDTH, HEIGHT = 4000, 3000
#: What toolport sends by default: the longest side at most 1568 px, at most 3.75 MiB.
MAX_SIDE = 1568
MAX_SENT_BYTES = 3 * 1024 * 1024 + 768 * 1024
#: The size a 4000x3000 image is sent at: 1568 on the long side, the aspect kept.
SENT = (1568, 1176)


def screenshot() -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (WIDTH, HEIGHT), (250, 250, 250))
    draw = ImageDraw.Draw(image)
    for row, y in enumerate(range(20, HEIGHT - 40, 40)):
        if row % 2:
            draw.rectangle((0, y - 8, WIDTH, y + 32), fill=(235, 238, 245))
        for x in range(20, WIDTH - 600, 620):
            draw.text((x, y), f"line {row}: fn read_file(path: &str) -> Result<String>", fill=(20, 20, 20))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def photo() -> bytes:
    from PIL import Image

    noise = Image.effect_noise((WIDTH, HEIGHT), 48)
    across = Image.linear_gradient("L").rotate(90).resize((WIDTH, HEIGHT))
    down = Image.linear_gradient("L").resize((WIDTH, HEIGHT))
    image = Image.merge("RGB", (across, down, noise))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=92)
    return out.getvalue()


def make(root: Path) -> dict[str, bytes]:
    """Write the files into `root`; return them by name."""
    shot = screenshot()
    files = {
        "shot.png": shot,
        "photo.jpg": photo(),
        "cut.png": shot[: len(shot) // 2],
        "garbage.jpg": b"\xff\xd8\xff\xe0" + bytes(i * 7919 % 251 for i in range(4096)),
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    return files


def check_sent(data: bytes, mime: str) -> tuple[int, int]:
    """The image toolport sent (`data`, said to be `mime`) decodes whole with Pillow, is that
    format, and is within the default bounds; its size in pixels."""
    from PIL import Image

    if len(data) > MAX_SENT_BYTES:
        raise AssertionError(f"the image sent is {len(data)} bytes, over {MAX_SENT_BYTES}")
    with Image.open(io.BytesIO(data)) as image:
        image.load()  # the whole decode: a truncated file raises here
        if Image.MIME.get(image.format or "") != mime:
            raise AssertionError(f"the image sent is {image.format}, said to be {mime}")
        if max(image.size) > MAX_SIDE:
            raise AssertionError(f"the image sent is {image.size}, over {MAX_SIDE} px a side")
        return image.size


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIR")
    made = make(Path(sys.argv[1]))
    print(", ".join(f"{name} ({len(data)} bytes)" for name, data in made.items()))

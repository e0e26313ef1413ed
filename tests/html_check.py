"""Checks shared by the report tests (audit and certificate): a strict HTML validator and a headless
Chromium render.

:func:`validate_html` runs two independent checks and returns every problem found (empty = valid):

* html5lib's WHATWG parser in strict mode: any parse error of the HTML standard (a stray end tag,
  a missing doctype, a character reference that is not one, a ``<td>`` outside a table, ...);
* a structural pass of our own on :mod:`html.parser`: every non-void element closed and properly
  nested, ``alt`` on every image, every image an embedded PNG that decodes (nothing is fetched).

Their companions (``test_validator_rejects_broken_pages`` in each report test) show that each
kind of breakage is rejected.
"""

from __future__ import annotations

import base64
import io
import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import html5lib
import numpy as np
from matplotlib import image as mpimg

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
CHROMIUM = "/usr/bin/chromium"


class StrictHTML(HTMLParser):
    """Collects structural errors: unclosed / mismatched tags, bad images, missing doctype."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.images, self.doctype = [], [], [], False

    def handle_decl(self, decl):
        self.doctype = decl.lower() == "doctype html"

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            a = dict(attrs)
            if not a.get("alt"):
                self.errors.append("img without alt")
            self.images.append(a.get("src", ""))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            self.errors.append(f"end tag for void element {tag}")
        elif not self.stack or self.stack[-1] != tag:
            self.errors.append(f"mismatched </{tag}> (open: {self.stack[-3:]})")
        else:
            self.stack.pop()


def html5_errors(text: str) -> list[str]:
    """Parse errors of the WHATWG algorithm (html5lib, strict: the first error raises)."""
    try:
        html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(text)
    except html5lib.html5parser.ParseError as exc:
        return [f"html5lib: {exc}"]
    return []


def validate_html(text: str) -> list[str]:
    """Every problem of the page (empty when it is a valid, self-contained HTML5 document)."""
    p = StrictHTML()
    p.feed(text)
    p.close()
    errors = html5_errors(text) + list(p.errors)
    if not p.doctype:
        errors.append("missing <!DOCTYPE html>")
    if p.stack:
        errors.append(f"unclosed tags: {p.stack}")
    for src in p.images:
        if not src.startswith("data:image/png;base64,"):
            errors.append("image is not an embedded PNG")
            continue
        try:
            raw = base64.b64decode(src.split(",", 1)[1], validate=True)
            arr = mpimg.imread(io.BytesIO(raw), format="png")
            if arr.ndim != 3 or arr.shape[0] < 50 or arr.shape[1] < 50:
                errors.append("image too small")
        except Exception as exc:  # noqa: BLE001 - any decoding failure is a validation error
            errors.append(f"image does not decode: {type(exc).__name__}")
    return errors


def chromium_screenshot(page: Path, tmp_path: Path, *, width: int = 1200, height: int = 9000) -> np.ndarray:
    """Render ``page`` in Debian's headless Chromium (``apt-get install chromium``; nothing is
    downloaded) and return the screenshot's RGB array."""
    assert os.path.exists(CHROMIUM), "this slow test needs Debian's chromium at /usr/bin/chromium"
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", f"--window-size={width},{height}",
           f"--screenshot={shot}", page.as_uri()]
    subprocess.run(cmd, check=True, timeout=120, capture_output=True)
    img = mpimg.imread(shot)
    assert img.shape[0] == height and img.shape[1] == width
    return img[..., :3]


def pixels_of(rgb: np.ndarray, colour: str, tol: float = 0.06) -> int:
    """Number of screenshot pixels within ``tol`` of ``colour`` ("#rrggbb")."""
    want = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    return int((np.abs(rgb - want).max(axis=-1) < tol).sum())

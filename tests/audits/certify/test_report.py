"""Certificate reports: the HTML page is validated by a strict parser (every tag closed and
properly nested, every embedded image a decodable PNG); the validator itself is shown to reject
broken pages. Markdown carries every claim."""

import base64
import copy
import io
import json
from html.parser import HTMLParser

import pytest
from matplotlib import image as mpimg

from audits.certify import certify
from audits.certify.report import audit_events, plots, render_html, render_markdown
from gtm_core import GTMConfig

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


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


def validate_html(text: str) -> list[str]:
    p = StrictHTML()
    p.feed(text)
    p.close()
    errors = list(p.errors)
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


@pytest.fixture(scope="module")
def doc():
    cfg = GTMConfig.load("examples/purified.toml")
    cert = certify(cfg, horizon=30, quick=True, seconds=2, seed=3, progress=False, witnesses={})
    return json.loads(cert.to_json())


def _with_audit_events(doc):
    d = copy.deepcopy(doc)
    d["body"]["claims"] = [c for c in d["body"]["claims"] if c["id"] != "privacy.audit"]
    d["body"]["claims"].append({
        "id": "privacy.audit", "category": "privacy", "statement": "audit <script>alert(1)</script> & co",
        "status": "pass", "witness": {"kind": "audit", "details": {}},
        "values": {"epsilon_claimed": 1.0, "epsilon_lower_bound": 0.4,
                   "events": [{"event": f"halt={k}", "loss": 0.1 * k, "loss_lower": 0.05 * k, "loss_upper": 0.15 * k}
                              for k in range(1, 8)]},
    })
    d["body"]["claims"] = [c for c in d["body"]["claims"] if c["id"] != "accuracy.exact-threshold"]
    d["body"]["claims"].append({
        "id": "accuracy.exact-threshold", "category": "accuracy", "statement": "exact", "status": "info",
        "witness": {"kind": "exact-engine", "details": {}},
        "values": {"thresholds": {"1": {"p_bar_paper": 0.02, "p_bar_exact": 0.03}, "10": {"p_bar_paper": 0.005,
                                                                                       "p_bar_exact": 0.0075}}},
    })
    return d


@pytest.fixture(scope="module")
def html_text(doc):
    return render_html(doc)


def test_html_report_is_valid_and_self_contained(doc, html_text):
    text = html_text
    assert validate_html(text) == []
    assert "http://" not in text and "https://" not in text  # nothing fetched from the network
    for c in doc["body"]["claims"]:
        assert c["id"] in text
    assert "All 30 steps pass every applicable check." in text


def test_html_report_embeds_four_plots_with_audit_events(doc):
    d = _with_audit_events(doc)
    text = render_html(d)
    assert validate_html(text) == []
    assert text.count("data:image/png;base64,") == 4
    assert "<script>" not in text  # statements are escaped
    assert len(audit_events(d["body"])) == 7
    assert "Exact rejection thresholds" in text and "<td>0.0075</td>" in text


def test_validator_rejects_broken_pages(html_text):
    good = html_text
    assert validate_html(good.replace("</table>", "", 1))
    assert validate_html(good.replace("<!DOCTYPE html>", ""))
    assert validate_html(good.replace("base64,iVBOR", "base64,AAAA", 1))
    assert validate_html(good.replace("</td>", "</th>", 1))


def test_markdown_report_lists_every_claim_and_refusal(doc):
    text = render_markdown(doc)
    for c in doc["body"]["claims"]:
        assert f"`{c['id']}`" in text
    assert "## Per-step checks" in text and "| t | s | c |" in text
    assert text.count("data:image/png;base64,") == len([p for _, p in plots(doc["body"]) if p])


def test_markdown_report_of_a_refused_configuration():
    cfg = GTMConfig.load("examples/unsafe_purification.toml")
    cert = certify(cfg, horizon=10, quick=True, seconds=1, seed=1, progress=False)
    text = render_markdown(json.loads(cert.to_json()))
    assert text.startswith("# GTM certificate: REFUSED")
    assert "**fix**: smallest change that works: delta_t <=" in text


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(doc, tmp_path):
    """Render the report in Debian's Chromium (installs nothing: `apt-get install chromium` first) and
    check the screenshot is a real page: right size, not blank, with the plots' colours in it."""
    import os
    import subprocess

    import numpy as np

    assert os.path.exists(CHROMIUM), "this slow test needs Debian's chromium at /usr/bin/chromium"
    page = tmp_path / "report.html"
    page.write_text(render_html(_with_audit_events(doc)))
    shot = tmp_path / "shot.png"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars", "--window-size=1200,9000",
           f"--screenshot={shot}", page.as_uri()]
    subprocess.run(cmd, check=True, timeout=120, capture_output=True)
    img = mpimg.imread(shot)
    assert img.shape[0] == 9000 and img.shape[1] == 1200
    rgb = img[..., :3]
    assert rgb.std() > 0.05  # not a blank page
    # matplotlib's default blue (#1f77b4) from the embedded plots is on the screen
    blue = np.array([0x1F, 0x77, 0xB4]) / 255
    assert (np.abs(rgb - blue).max(axis=-1) < 0.06).sum() > 200

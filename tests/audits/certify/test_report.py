"""Certificate reports: the HTML page is validated by a strict parser (html5lib's WHATWG parser in
strict mode, and every tag closed and properly nested, every embedded image a decodable PNG:
:func:`tests.html_check.validate_html`); the validator itself is shown to reject broken pages.
Markdown carries every claim."""

import copy
import html
import json

import pytest

from audits.certify import certify
from audits.certify.report import audit_events, plots, render_html, render_markdown
from audits.plotting import PALETTE
from gtm_core import GTMConfig
from tests.html_check import chromium_screenshot, pixels_of, validate_html

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
    assert validate_html(good.replace("<td>", "<td><span>", 1))  # an unclosed inline element
    assert validate_html(good.replace("<tbody>", "<tbody><td>x</td></table>", 1))


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


@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(doc, tmp_path):
    """Render the report in Debian's Chromium and check the screenshot is a real page: not blank,
    with the plots' first palette colour (Okabe-Ito blue) on the screen."""
    page = tmp_path / "report.html"
    page.write_text(render_html(_with_audit_events(doc)))
    rgb = chromium_screenshot(page, tmp_path)
    assert rgb.std() > 0.05  # not a blank page
    assert pixels_of(rgb, PALETTE[0]) > 200


def _capped_and_uncapped_docs():
    base = GTMConfig.load("examples/default.toml").to_dict()
    out = {}
    for policy in ("none", "refuse"):
        cfg = GTMConfig.from_dict({**base, "gtm": {**base["gtm"], "evaluation_budget": policy}})
        out[policy] = json.loads(certify(cfg, horizon=20, quick=True, seconds=2, seed=3, progress=False,
                                         witnesses={}).to_json())
    return out


def test_reports_state_eps_delta_for_a_capped_config_and_pure_only_uncapped():
    docs = _capped_and_uncapped_docs()
    capped_md, capped_html = render_markdown(docs["refuse"]), render_html(docs["refuse"])
    approx = next(c for c in docs["refuse"]["body"]["claims"] if c["id"] == "privacy.approximate")
    line = f"privacy: (1, {approx['values']['delta_upper']:.3g})-differentially private (approximate"
    assert line in capped_md and "not pure epsilon-DP" in capped_md
    assert html.escape(line, quote=True) in capped_html
    assert "1-differentially private (pure" not in capped_md.split("## Claims")[0]
    pure_md = render_markdown(docs["none"])
    assert 'privacy: 1-differentially private (pure: evaluation_budget = "none") [pass]' in pure_md
    assert "(approximate" not in pure_md.split("## Claims")[0]
    # the capped certificate's n/a pure claim opens with what applies, not with "the GTM is pure"
    na = next(c for c in docs["refuse"]["body"]["claims"] if c["id"] == "privacy.pure-epsilon")
    assert na["status"] == "not-applicable" and na["statement"].startswith("Not applicable to the deployed mechanism")

"""Audit reports: ``.html`` is one self-contained HTML5 page that a strict parser
accepts (:func:`tests.html_check.validate_html`: html5lib strict + a structural pass), ``.md`` is
Markdown whose tables keep their columns, both with the plot embedded and every value escaped; the
slow test renders the page in headless Chromium."""

import dataclasses
import re

import pytest

from audits.gtm_audit import audit
from audits.plotting import PALETTE
from audits.report import audit_html, audit_markdown, render_report, report_format, write_report
from audits.statistics import EventEstimate
from audits.targets import SimulatorTarget
from gtm_core import GTMConfig, make_plan
from gtm_core.errors import InvalidParameter
from tests.html_check import chromium_screenshot, html5_errors, pixels_of, validate_html

NASTY = "halt>=2|never <script>alert(1)</script> & `x`"


@pytest.fixture(scope="module")
def result():
    plan = make_plan(GTMConfig.load("examples/default.toml"))
    r = audit(SimulatorTarget(plan), epsilon=1.0, eps_t=0.1, seconds=None, max_samples=40_000, seed=0,
              progress=False, max_T=5)
    # one more event whose name carries every character a report must escape
    nasty = EventEstimate(NASTY, 50, 40, 1000, 1000, 0.22, 0.01, 0.45)
    return dataclasses.replace(r, per_event=[nasty, *r.per_event], target="python -m x --a '<b>' | c")


def test_html_report_is_valid_single_file(result, tmp_path):
    path = write_report(result, tmp_path / "audit.html")
    text = path.read_text()
    assert validate_html(text) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.html"]  # no loose PNG
    assert text.count("data:image/png;base64,") == 1
    assert "http://" not in text and "https://" not in text
    assert "<script>" not in text and "halt&gt;=2|never &lt;script&gt;" in text
    assert f"verdict {result.verdict}" in text and f"{result.epsilon_lower_bound:.4f}" in text
    assert "Bonferroni" in text  # the table's columns are explained


def test_validator_rejects_broken_pages(result):
    good = audit_html(result, None)
    assert validate_html(good) == []
    assert validate_html(good.replace("</table>", "", 1))
    assert validate_html(good.replace("<!DOCTYPE html>", ""))
    # an unescaped event name: html.parser reads it as text, the WHATWG parser does not
    unescaped = good.replace("halt&gt;=2|never &lt;script", "halt<=2|never <b", 1)
    assert html5_errors(unescaped)
    with_png = audit_html(result, "iVBORw0KGgo=")  # not a decodable PNG
    assert any("does not decode" in e for e in validate_html(with_png))


def _table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


def test_markdown_report_keeps_its_table_columns(result, tmp_path):
    path = write_report(result, tmp_path / "audit.md")
    text = path.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.md"]
    assert text.startswith("# GTM privacy audit") and text.count("data:image/png;base64,") == 1
    rows = _table_rows(text)
    assert len(rows) >= 3
    # a cell separator is an unescaped |; every row has as many as the header
    cells = [len(re.findall(r"(?<!\\)\|", r)) for r in rows]
    assert len(set(cells)) == 1, cells
    assert "halt>=2\\|never" in text


def test_markdown_companion_unescaped_pipe_breaks_the_table(result):
    # what the check above guards against: the old report wrote event names raw
    text = audit_markdown(result, None).replace("halt>=2\\|never", "halt>=2|never")
    cells = [len(re.findall(r"(?<!\\)\|", r)) for r in _table_rows(text)]
    assert len(set(cells)) > 1


@pytest.mark.parametrize("name,fmt", [("a.html", "html"), ("a.HTM", "html"), ("a.md", "markdown")])
def test_report_format_from_suffix(name, fmt):
    assert report_format(name) == fmt


@pytest.mark.parametrize("name", ["a.txt", "a", "a.png"])
def test_other_suffixes_are_refused(name):
    with pytest.raises(InvalidParameter, match="must end in .html, .htm or .md"):
        report_format(name)
    with pytest.raises(InvalidParameter):
        render_report(None, "pdf")


@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(result, tmp_path):
    """The page renders: not blank, and the embedded plot's colours (Okabe-Ito blue for the events,
    the claim's vermillion) are on the screen."""
    page = write_report(result, tmp_path / "audit.html")
    rgb = chromium_screenshot(page, tmp_path, height=3000)
    assert rgb.std() > 0.05
    assert pixels_of(rgb, PALETTE[0]) > 100 and pixels_of(rgb, PALETTE[3]) > 50

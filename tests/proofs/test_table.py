"""proofs.table: the committed docs/proofs.md is generated from the registry and up to date."""

from pathlib import Path

from proofs import table

DOC = Path(__file__).resolve().parents[2] / "docs" / "proofs.md"


def test_docs_proofs_md_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == table.render(), "regenerate: python -m proofs.table > docs/proofs.md"


def test_every_check_appears_in_the_table():
    text = table.render()
    for key, erratum in table.errata():
        assert f"`{key}`" in text and erratum.name in text

"""`gtm prove [LEMMA...] [--json PATH]`: run the lemma checks (Z3 + cvc5, interval certificates) and their mutants.

Exit 0 only if every selected lemma is proved or certified and every mutant is
killed; 1 otherwise; 2 on bad usage (e.g. an unknown lemma name).
"""

from __future__ import annotations

import click

from .common import EXIT_CHECK_FAILED, EXIT_OK, check_writable, guard, write_json


def format_table(report) -> str:
    """The readable report of a :class:`proofs.registry.ProveReport`."""
    head = (
        f"{'lemma':<14} {'paper':<34} {'status':<9} {'steps':>5} {'chain':>5} {'mutants':>7} {'errata':>6} "
        f"{'seconds':>8}  method"
    )
    lines = [head, "-" * len(head)]
    for r in report.results:
        steps_ok = sum(s.ok for s in r.steps)
        chain = "-" if r.chain is None else ("ok" if r.chain.ok else "FAIL")
        errata = "-" if not r.errata else f"{len(r.errata) // 2}"
        lines.append(
            f"{r.key:<14} {r.ref[:34]:<34} {r.status:<9} {steps_ok:>2}/{len(r.steps):<2} {chain:>5} "
            f"{r.mutants_killed:>3}/{len(r.mutants):<3} {errata:>6} {r.seconds:>8.2f}  {r.method}"
        )
    d = report.to_dict()["summary"]
    lines.append("-" * len(head))
    lines.append(
        f"{d['lemmas']} checks: {d['proved']} proved, {d['certified']} certified, {d['failed']} failed, "
        f"{d['not_run']} not run; "
        f"mutants killed {d['mutants_killed']}/{d['mutants']}; {report.seconds:.1f} s"
    )
    v = report.versions
    lines.append(f"z3 {v['z3']}, cvc5 {v['cvc5']}, python-flint {v['python-flint']}")
    for r in report.results:
        for e in r.errata:
            if e.name.endswith("as printed") and e.ok:
                name = e.name.rsplit(":", 1)[0]
                lines.append(f"erratum {r.ref}: {name} - counterexample {e.detail.get('counterexample')}")
    for r in report.results:
        for s in r.steps + ([r.chain] if r.chain else []) + r.errata:
            if not s.ok:
                lines.append(f"FAILED {r.key}: {s.kind} {s.name!r} {s.detail}")
        for m in r.mutants:
            if not m.ok:
                lines.append(f"SURVIVED {r.key}: mutant {m.name!r} {m.detail}")
    return "\n".join(lines)


@click.command()
@click.argument("lemmas", nargs=-1, metavar="[LEMMA]...")
@click.option("--json", "json_path", default=None, help="write the machine-readable result here")
@click.option("--seconds", type=float, default=None,
              help="time budget: checks not started within it are reported not-run (exit 1)")
@click.option("--list", "list_only", is_flag=True, help="list the registered checks and exit")
@guard
def command(lemmas, json_path, seconds, list_only):
    """Run the lemma checks (Z3 + cvc5 proofs, arb interval certificates) and their mutants.

    LEMMA is a registry key (e.g. lemma11.1) or a prefix (e.g. lemma11); default: all.
    """
    from proofs import registry  # solvers load only when this verb runs

    out = check_writable(json_path)
    chosen = registry.select(list(lemmas))
    if list_only:
        for lm in chosen:
            click.echo(f"{lm.key:<14} {lm.ref}")
        return
    report = registry.run(chosen, progress=lambda msg: click.echo(f"prove: {msg}", err=True), seconds=seconds)
    click.echo(format_table(report))
    write_json(out, report.to_dict())
    raise SystemExit(EXIT_OK if report.ok else EXIT_CHECK_FAILED)

"""The documentation works as written.

Conventions the documents follow (README.md, docs/*.md, audits/README.md):

* A ```` ```sh ```` block holds commands a user types at the repository root, after the README's
  set-up. A command that must fail ends with a comment ``# exit N`` (its documented exit code);
  every other command must exit 0. A command ending in ``&`` (with its output redirected to a file)
  starts a server in the background for the commands after it (``dask scheduler`` / ``dask worker``;
  ``sleep N`` waits for it): it must end by itself (e.g. ``--idle-timeout``).
* A ```` ```output ```` block is the expected stdout of the nearest ``sh`` block above it: its lines
  must appear in that order (other lines may come between them); ``...`` inside a line matches any
  text, a line that is only ``...`` matches any lines, runs of blanks match any blanks.
* An HTML comment on the line before a block marks it for the replay:
  ``<!-- docs-test: skip: REASON -->`` (illustrative: the commands need files that are the user's
  own) or ``<!-- docs-test: long: REASON -->`` (takes more than a few minutes; replayed only with
  ``GTM_DOCS_LONG=1``). ``<!-- main-command -->`` and ``<!-- test-command -->`` are the README's
  set-up blocks.
* A ```` ```python ```` block is a doctest (``>>>`` prompts); the tests run it.

Default run (fast): relative links and anchors resolve and nothing links to ``../shared``; every
``sh`` block parses and uses only existing verbs, options, modules and files; every documented
Python snippet and the API docstring examples pass as doctests; ``docs/cli.md`` matches the
command tree; the Sphinx API reference builds with warnings as errors (about 10 s). Each checker
has a companion test showing it rejects a broken input.

Slow (``-m slow``): the README's journeys replayed on a fresh copy of the checkout with a fresh
virtual environment made exactly as the README says: the main-command block, then the
test-command block, then every ``sh`` block of README.md and docs/*.md in document order, checking
exit codes and output shapes. The test-command's last part, ``python -m pytest -q`` (the whole
default suite, which .ci/run runs as exactly this command), is replayed only with ``GTM_DOCS_LONG=1``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINKED_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "audits" / "README.md"]
REPLAYED_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCTEST_FILES = [*LINKED_DOCS, ROOT / "docs" / "api" / "index.rst"]
# modules whose docstrings carry the documented API's examples
DOCTEST_MODULES = ["audits.gtm_audit", "gtm_core.input_privacy", "audits.targets", "gtm_core.config",
                   "gtm_core.planners.plan", "gtm_core.reference"]
LONG = os.environ.get("GTM_DOCS_LONG") == "1"


# ---------------------------------------------------------------------------
# markdown parsing
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str  # the HTML comment on the line before the fence ("" if none)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_MARKER = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")


def fenced_blocks(path: Path, text: str | None = None) -> list[Block]:
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path}:{i + 1}: unclosed code fence")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mk = _MARKER.match(lines[k]) if k >= 0 else None
        blocks.append(Block(path, i + 1, m.group(1), "\n".join(lines[i + 1:j]), mk.group(1) if mk else ""))
        i = j + 1
    return blocks


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code spans."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = "".join(ch for ch in s if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return s.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    out = set()
    for line in prose_with_code_spans(text).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = github_slug(m.group(1).replace("`", ""))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def prose_with_code_spans(text: str) -> str:
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)


_LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(path: Path, text: str | None = None) -> list[str]:
    """Relative links of a markdown file that do not resolve (file or anchor), and any link to ../shared."""
    text = path.read_text(encoding="utf-8") if text is None else text
    problems = []
    for m in _LINK.finditer(prose(text)):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if "shared" in Path(file_part).parts or not dest.is_relative_to(ROOT):
            problems.append(f"{target}: points outside the repository (a clone has no ../shared)")
            continue
        if not dest.exists():
            problems.append(f"{target}: {dest.relative_to(ROOT)} does not exist")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{target}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    return problems


# ---------------------------------------------------------------------------
# shell blocks
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    text: str  # the command as typed (continuations joined, trailing comment removed)
    exit_code: int


def commands(block: Block) -> list[Command]:
    """The commands of an sh block, each with its documented exit code (default 0)."""
    out, pending = [], ""
    for raw in block.text.splitlines():
        line = raw.rstrip()
        if pending:
            line, pending = pending + " " + line.strip(), ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.search(r"\s#\s*exit\s+(\d+)\s*$", line)
        text = _without_comment(line)
        if text:
            out.append(Command(text, int(m.group(1)) if m else 0))
    if pending:
        raise AssertionError(f"{block.where}: a line continuation at the end of the block")
    return out


def _without_comment(line: str) -> str:
    """The command without its trailing comment, re-quoted (shell operators kept as they are)."""
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return " ".join(p if p in ("&&", "||", ";", "&") + REDIRECTIONS + DUPLICATIONS else shlex.quote(p) for p in lexer)


REDIRECTIONS = (">", ">>", "2>", "2>>", "<")  # a redirection's target is a file, not an argument
DUPLICATIONS = ("2>&1",)  # a redirection that names no file


def simple_commands(cmd: Command) -> list[list[str]]:
    """Split a command line on &&, || and ; into argument lists."""
    argv = shlex.split(cmd.text)
    out, cur = [], []
    skip_next = False
    for tok in argv:
        if skip_next:
            skip_next = False
            continue
        if tok in REDIRECTIONS:
            skip_next = True
            continue
        if tok in DUPLICATIONS:
            continue
        if tok in ("&&", "||", ";", "&"):
            out.append(cur)
            cur = []
        else:
            cur.append(tok)
    out.append(cur)
    return [a for a in out if a]


_REPO_PATH = re.compile(r"^(examples|docs|audits|gtm_core|proofs|benchmarks|tests|property_tests)/")
_OUTPUT_OPTIONS = {"--json", "--report", "--out"}


def problems_of(block: Block) -> list[str]:
    """Why an sh block would not run as documented: unknown programs, verbs, options, modules, files."""
    problems = []
    outputs: set[str] = set()
    for cmd in commands(block):
        for argv in simple_commands(cmd):
            problems += [f"{block.where}: `{shlex.join(argv)}`: {p}" for p in _argv_problems(argv, outputs, block)]
    return problems


def _argv_problems(argv: list[str], outputs: set[str], block: Block) -> list[str]:
    prog, args = argv[0], argv[1:]
    outputs.update(a for i, a in enumerate(args) if i > 0 and args[i - 1] in _OUTPUT_OPTIONS)
    if args[:2] == ["-m", "sphinx"]:
        outputs.add(args[-1])  # sphinx-build SOURCE OUTPUT
    files = [a for i, a in enumerate(args) if (_REPO_PATH.match(a) or a.endswith(".toml")) and a not in outputs
             and (i == 0 or args[i - 1] != "--target")]
    problems = [f"{f} does not exist" for f in files if not (ROOT / f).exists()]
    if prog == "gtm":
        problems += _gtm_problems(args)
        target = _option_value(args, "--target")
        if target:
            problems += _argv_problems(shlex.split(target), outputs, block)
    elif prog in ("python", "python3"):
        if len(args) >= 2 and args[0] == "-m":
            import importlib.util

            if args[1] != "venv" and importlib.util.find_spec(args[1]) is None:
                problems.append(f"no module {args[1]}")
        else:
            problems.append("python is only run as `python -m MODULE` in the docs")
    elif prog in (".", "source"):
        if args != [".venv/bin/activate"]:
            problems.append("only `. .venv/bin/activate` is sourced")
    elif prog == "pip":
        problems += _pip_problems(args)
    elif prog in ("head", "cat"):  # reading an output a previous command of the block wrote
        if not args:
            problems.append(f"{prog} without a file")
    elif prog == "dask":
        problems += _dask_problems(args)
    elif prog == "sleep":  # waiting for a server started in the background
        if len(args) != 1 or not args[0].isdigit():
            problems.append("sleep takes one whole number of seconds")
    else:
        problems.append(f"unknown program {prog!r}")
    return problems


def _option_value(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def _gtm_problems(args: list[str]) -> list[str]:
    """Parse the arguments with the real click command tree, without running anything."""
    from audits.cli import cli

    cmd, name, parent = cli, "gtm", None
    try:
        while True:
            ctx = cmd.make_context(name, list(args), parent=parent)
            if not isinstance(cmd, click.Group):
                return []
            rest = [*ctx._protected_args, *ctx.args]
            if not rest:
                return ["a verb is missing"]
            name, cmd, args = cmd.resolve_command(ctx, rest)
            parent = ctx
    except click.exceptions.Exit:
        return []
    except click.ClickException as exc:
        return [exc.format_message()]


def _dask_problems(args: list[str]) -> list[str]:
    """``dask scheduler`` / ``dask worker``: parsed with Dask's own click commands, without running them."""
    import importlib

    commands_ = {"scheduler": "distributed.cli.dask_scheduler", "worker": "distributed.cli.dask_worker"}
    if not args or args[0] not in commands_:
        return [f"only `dask scheduler` and `dask worker` are documented, got {shlex.join(args[:1])!r}"]
    cmd = importlib.import_module(commands_[args[0]]).main
    try:
        cmd.make_context(f"dask {args[0]}", list(args[1:]))
    except click.exceptions.Exit:
        return []
    except click.ClickException as exc:
        return [exc.format_message()]
    return []


def _pip_problems(args: list[str]) -> list[str]:
    import tomllib

    if not args or args[0] != "install":
        return ["only `pip install` is documented"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    problems = []
    for a in args[1:]:
        if a.startswith("-"):
            if a != "-e":
                problems.append(f"unexpected pip option {a}")
            continue
        m = re.match(r"^\.(?:\[([\w,-]+)\])?$", a)
        if not m:
            problems.append(f"pip installs something other than this checkout: {a}")
        elif m.group(1):
            problems += [f"no extra [{e}] in pyproject.toml" for e in m.group(1).split(",") if e not in extras]
    return problems


def output_mismatch(expected: str, stdout: str) -> str | None:
    """None if the expected lines appear in order in stdout (see the module docstring), else why not."""
    lines = [ln.strip() for ln in stdout.splitlines()]
    pos = 0
    for exp in expected.splitlines():
        exp = exp.strip()
        if not exp or exp == "...":
            continue
        pieces = exp.split("...")  # blanks next to an ellipsis are part of what it elides
        pieces = [p.rstrip() if i < len(pieces) - 1 else p for i, p in enumerate(pieces)]
        pieces = [p.lstrip() if i > 0 else p for i, p in enumerate(pieces)]
        parts = [re.sub(r"\\\s+|\s+", r"\\s+", re.escape(p)) for p in pieces]
        pattern = re.compile(".*".join(parts))
        while pos < len(lines) and not pattern.fullmatch(lines[pos]):
            pos += 1
        if pos == len(lines):
            return f"no line (in order) matches {exp!r}"
        pos += 1
    return None


def all_blocks(files) -> list[Block]:
    return [b for f in files for b in fenced_blocks(f)]


def expected_outputs(blocks: list[Block]) -> dict[Block, str]:
    """Each sh block's expected output: the output blocks after it, up to the next sh block."""
    out: dict[Block, list[str]] = {}
    last: Block | None = None
    for b in blocks:
        if b.lang == "sh":
            last = b
        elif b.lang == "output":
            assert last is not None and last.path == b.path, f"{b.where}: output block without an sh block above it"
            out.setdefault(last, []).append(b.text)
    return {k: "\n".join(v) for k, v in out.items()}


def _kind(block: Block) -> str:
    m = re.match(r"^docs-test:\s*(skip|long)\b", block.marker)
    if m:
        return m.group(1)
    if block.marker in ("main-command", "test-command"):
        return block.marker
    return "run"


# ---------------------------------------------------------------------------
# default run: links, blocks, doctests, CLI reference, API reference
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", LINKED_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(path):
    assert broken_links(path) == []


def test_no_document_points_at_the_shared_folder():
    for path in LINKED_DOCS:
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text and "DESIGN.md" not in text, f"{path.relative_to(ROOT)} cites a file a clone does not have"


def test_link_checker_rejects_broken_links_anchors_and_shared():
    path = ROOT / "README.md"
    bad = ("[a](docs/nope.md) [b](docs/protocol.md#no-such-heading) [c](../shared/DESIGN.md) "
           "[d](opendp.md) [ok](docs/protocol.md#errors) [web](https://example.org/x)")
    found = broken_links(path, bad)
    assert len(found) == 4, found
    assert broken_links(path, "[ok](docs/configuration.md#gtm-table) `[x](nope.md)`") == []


def test_github_slugs():
    assert github_slug("User journey: three ways to use gtm") == "user-journey-three-ways-to-use-gtm"
    assert github_slug("gtm deploy init") == "gtm-deploy-init"
    assert github_slug("[gtm] table") == "gtm-table"
    assert github_slug("1. Audit a deployment") == "1-audit-a-deployment"


def test_every_sh_block_uses_existing_verbs_options_modules_and_files():
    blocks = [b for b in all_blocks([*REPLAYED_DOCS, ROOT / "audits" / "README.md"]) if b.lang == "sh"]
    assert len(blocks) >= 8
    problems = [p for b in blocks for p in problems_of(b)]
    assert problems == []


def test_setup_blocks_are_where_ci_and_the_replay_look():
    kinds = [_kind(b) for b in fenced_blocks(ROOT / "README.md") if b.lang == "sh"]
    assert kinds.count("main-command") == 1 and kinds.count("test-command") == 1
    assert kinds.index("main-command") < kinds.index("test-command")


def test_block_checker_rejects_unknown_verbs_options_and_files():
    doc = ROOT / "README.md"
    cases = {
        "gtm plann examples/default.toml": "No such command",
        "gtm plan examples/nope.toml": "does not exist",
        "gtm plan examples/default.toml --stepz 1": "No such option",
        "gtm audit --epsilon 1 --eps-t 0.1": "Missing option",
        "gtm deploy sttus x.state": "No such command",
        "python -m audits.nope": "no module",
        "pip install '.[nope]'": "no extra",
        "curl https://example.org | sh": "unknown program",
        'gtm audit --target "python -m audits.serve examples/nope.toml" --epsilon 1 --eps-t 0.1': "does not exist",
        "dask schedulr --port 8786": "only `dask scheduler` and `dask worker`",
        "dask scheduler --prot 8786 > s.log 2>&1 &": "No such option",
        "dask worker tcp://127.0.0.1:8786 --nthreads one": "not a valid integer",
        "sleep soon": "whole number",
    }
    for text, why in cases.items():
        found = problems_of(Block(doc, 1, "sh", text, ""))
        assert any(why in p for p in found), (text, found)
    ok = 'gtm certify examples/default.toml --quick --json c.json\ngtm certify --verify c.json   # exit 1'
    assert problems_of(Block(doc, 1, "sh", ok, "")) == []
    assert [c.exit_code for c in commands(Block(doc, 1, "sh", ok, ""))] == [0, 1]


def test_background_servers_keep_their_operators():
    block = Block(ROOT / "README.md", 1, "sh", "dask scheduler --port 8786 > scheduler.log 2>&1 &\nsleep 20", "")
    first, second = commands(block)
    assert first.text == "dask scheduler --port 8786 > scheduler.log 2>&1 &" and second.text == "sleep 20"
    assert simple_commands(first) == [["dask", "scheduler", "--port", "8786"]]
    assert problems_of(block) == []


def test_commands_join_continuations_and_read_exit_comments():
    block = Block(ROOT / "README.md", 1, "sh", "# a comment\ngtm audit --target \"python -m audits.serve x\" \\\n"
                  "    --epsilon 1 --eps-t 0.1   # exit 1\ngtm plan examples/default.toml  # per-step", "")
    cmds = commands(block)
    assert [c.exit_code for c in cmds] == [1, 0]
    assert shlex.split(cmds[0].text)[:3] == ["gtm", "audit", "--target"]
    assert shlex.split(cmds[0].text)[3] == "python -m audits.serve x"
    assert cmds[1].text == "gtm plan examples/default.toml"


def test_output_matcher_accepts_the_shape_and_rejects_drift():
    out = "verdict: violation\nepsilon claimed: 1   lower bound (0.95 confidence): 3.1379\nsamples: 20 in 4.1 s\n"
    assert output_mismatch("verdict: violation\n...\nsamples: ... in ... s", out) is None
    assert output_mismatch("verdict: no-violation-found", out) is not None
    assert output_mismatch("samples: ... in ... s\nverdict: violation", out) is not None  # order matters
    assert output_mismatch("epsilon claimed: 2 ...", out) is not None
    assert output_mismatch("epsilon claimed: 1 ... bound (0.95 ...): 3.1...", out) is None
    assert output_mismatch("epsilon claimed: 1, ...", out) is not None


def test_every_output_block_follows_an_sh_block():
    for path in REPLAYED_DOCS:
        expected_outputs(fenced_blocks(path))


def test_every_documented_python_snippet_is_a_doctest():
    for block in all_blocks(LINKED_DOCS):
        if block.lang in ("python", "py", "pycon"):
            assert ">>>" in block.text, f"{block.where}: a Python snippet that is not a doctest"


def test_documented_toml_configurations_are_valid():
    from gtm_core import GTMConfig

    n = 0
    for block in all_blocks(LINKED_DOCS):
        if block.lang == "toml" and "[gtm]" in block.text and "[stream]" in block.text:
            GTMConfig.from_toml(block.text, source=block.where)
            n += 1
        if block.lang == "json" and '"gtm"' in block.text:
            GTMConfig.from_dict(json.loads(block.text), source=block.where)
            n += 1
    assert n >= 4


def test_doctests_of_the_documents_and_the_api_docstrings():
    # in a subprocess: snippets change global state (OpenDP features) and run from the repo root
    script = (
        "import doctest, importlib, sys\n"
        "failed = 0\n"
        "for f in sys.argv[1:]:\n"
        "    r = doctest.testfile(f, module_relative=False)\n"
        "    failed += r.failed\n"
        f"for m in {DOCTEST_MODULES!r}:\n"
        "    r = doctest.testmod(importlib.import_module(m))\n"
        "    failed += r.failed\n"
        "    assert r.attempted > 0, m\n"
        "sys.exit(1 if failed else 0)\n"
    )
    files = [str(f) for f in DOCTEST_FILES if ">>>" in f.read_text(encoding="utf-8")]
    assert len(files) >= 6
    out = subprocess.run([sys.executable, "-c", script, *files], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_cli_reference_is_generated_from_the_command_tree():
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_cli.py"), "--check"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr + " (regenerate with: python docs/gen_cli.py)"


def test_cli_reference_names_every_verb_and_option():
    from audits.cli import cli

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    ctx = click.Context(cli, info_name="gtm")
    for name in cli.list_commands(ctx):
        cmd = cli.get_command(ctx, name)
        assert f"## `gtm {name}`" in text
        for p in cmd.params:
            for opt in getattr(p, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}" in text, (name, opt)


def _sphinx(src: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(src),
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_api_reference_builds_with_warnings_as_errors(tmp_path):
    out = _sphinx(ROOT / "docs" / "api", tmp_path / "html")
    assert out.returncode == 0, out.stderr[-4000:]
    page = (tmp_path / "html" / "auditing.html").read_text(encoding="utf-8")
    assert "eps_t" in page and "ReferenceTarget" in page


def test_api_build_fails_on_a_warning(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "docs" / "api" / "conf.py", src / "conf.py")
    (src / "index.rst").write_text("t\n=\n\n.. autofunction:: gtm_core.planners.no_such_function\n")
    out = _sphinx(src, tmp_path / "html")
    assert out.returncode != 0 and "no_such_function" in out.stderr


# ---------------------------------------------------------------------------
# slow: replay the journeys on a fresh virtual environment
# ---------------------------------------------------------------------------


def _copy_checkout(dest: Path) -> None:
    """The files a clone would have: tracked and untracked-but-not-ignored ones."""
    listing = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for rel in filter(None, listing):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _run(text: str, cwd: Path, env: dict, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _clean_env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.prefix))))
    env["GTM_CACHE_DIR"] = str(tmp / "cache")  # a fresh lemma-check cache, as for a new user
    return env


@pytest.fixture(scope="module")
def fresh_checkout(tmp_path_factory):
    """A copy of the checkout with .venv made exactly as the README says (main command, then test command)."""
    tmp = tmp_path_factory.mktemp("journeys")
    repo = tmp / "gtm"
    repo.mkdir()
    _copy_checkout(repo)
    env = _clean_env(tmp)
    readme = fenced_blocks(repo / "README.md")
    expected = expected_outputs(readme)
    main = next(b for b in readme if b.marker == "main-command")
    test = next(b for b in readme if b.marker == "test-command")
    out = _run(main.text, repo, env)
    assert out.returncode == 0, f"main command failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    if main in expected:
        assert output_mismatch(expected[main], out.stdout) is None, output_mismatch(expected[main], out.stdout)
    install = test.text
    if not LONG:  # the whole default suite: .ci/run runs exactly this command
        install = re.sub(r"\s*&&\s*python -m pytest -q\s*$", "", test.text.strip())
        assert install != test.text.strip(), "the test command no longer ends with `python -m pytest -q`"
    out = _run(install, repo, env, timeout=3600)
    assert out.returncode == 0, f"test command failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    venv = repo / ".venv"
    env = {**env, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}
    return repo, env


def _replay_blocks():
    out = []
    for path in REPLAYED_DOCS:
        for b in fenced_blocks(path):
            if b.lang == "sh" and _kind(b) in ("run", "long"):
                out.append(pytest.param(b, id=b.where, marks=[pytest.mark.slow]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("block", _replay_blocks())
def test_journey_block_runs_as_documented(block, fresh_checkout):
    if _kind(block) == "long" and not LONG:
        pytest.skip(f"{block.where}: {block.marker} (set GTM_DOCS_LONG=1 to replay it)")
    repo, env = fresh_checkout
    stdout = []
    for cmd in commands(block):
        out = _run(cmd.text, repo, env)
        assert out.returncode == cmd.exit_code, (
            f"{block.where}: `{cmd.text}` exited {out.returncode}, documented {cmd.exit_code}\n"
            f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        stdout.append(out.stdout)
    expected = expected_outputs(fenced_blocks(block.path)).get(block)
    if expected is not None:
        why = output_mismatch(expected, "\n".join(stdout))
        assert why is None, f"{block.where}: {why}\n--- stdout ---\n{''.join(stdout)[-4000:]}"


"""The README states what the code does: its option tables come from the option declarations."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT


def test_readme_option_tables_are_generated_from_the_declarations():
    result = subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "dev" / "update-readme"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_readme_opens_with_the_install_commands_ci_runs():
    readme = (REPO_ROOT / "README.md").read_text()
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    test_command = ci.strip().splitlines()[-1]
    assert test_command in readme
    assert readme.index("bin/xlazero") < readme.index(test_command)


def test_every_bin_program_is_in_the_readmes_tools_tables():
    """bin/ holds the programs for users, bin/perf/ the benchmarks, bin/check/ the checks and soak,
    bin/dev/ the developer tools: each is listed once in the README's tables (issue 40), so
    nobody has to read the scripts to find one."""
    text = (REPO_ROOT / "README.md").read_text()
    tools = text[text.index("## Tools (`bin/`)") :]
    tools = tools[: tools.index("\n## ", 1)]
    bin_dir = REPO_ROOT / "bin"
    folders = [bin_dir, *(bin_dir / sub for sub in ("perf", "check", "dev"))]
    programs = sorted(
        p.relative_to(REPO_ROOT).as_posix()
        for folder in folders
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith("_") and p.suffix != ".py"
    )
    assert len(programs) >= 10, programs  # the listing found the folders
    missing = [name for name in programs if f"`{name}" not in tools]
    assert not missing, f"bin programs not in the README's Tools tables: {missing}"


def test_readme_is_a_front_page_of_at_most_150_lines_before_the_option_tables():
    """The README is a front page: measurements and their history live in docs/."""
    lines = (REPO_ROOT / "README.md").read_text().splitlines()
    assert "## UCI options" in lines, "README.md has no '## UCI options' heading"
    before = lines.index("## UCI options")
    assert before <= 150, f"README.md has {before} lines before '## UCI options' (at most 150)"

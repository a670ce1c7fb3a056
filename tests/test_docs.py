"""The documentation a reader meets: the README as a short door whose links
lead somewhere, and the docs site, built in strict mode (a broken link, an
unknown anchor or a page missing from the navigation fails the build)."""

import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_is_a_door():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for heading in ("## Install and test", "## Quick start", "## Configuration", "## Benchmarks",
                    "## Not supported yet", "## Documentation"):
        assert heading in text, heading


def test_readme_links_lead_to_files():
    for target in LINK.findall(README.read_text()):
        if "://" in target or target.startswith("#"):
            continue
        path = (ROOT / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"README.md links to {target}, which does not exist"


def test_readme_and_docs_show_the_same_benchmark_table():
    def table(path):
        text = path.read_text()
        begin, end = text.index("<!-- bench:begin -->"), text.index("<!-- bench:end -->")
        return text[begin:end]

    assert table(README) == table(ROOT / "docs" / "benchmarks.md")


def test_docs_build_strictly(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "internals" / "adding-a-kernel" / "index.html").exists()

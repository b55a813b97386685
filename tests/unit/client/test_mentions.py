"""`@path` in the terminal chat: which mentions attach what, and what Tab offers."""

from __future__ import annotations

from pathlib import Path

from cody_lsp.client.mentions import candidates, label, mentions


def test_mentions_attach_files_folders_and_line_ranges(tmp_path: Path):
    (tmp_path / "app.py").write_text("x\n")
    (tmp_path / "src").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path.parent / "outside.py").write_text("")
    text = "see @app.py:10-20, @src/ and @app.py:3. mail me at a@b.com; @nope.py @.git/config @../outside.py"
    attachments, unknown = mentions(text, tmp_path)
    assert attachments == [
        {"type": "file", "path": "app.py", "startLine": 10, "endLine": 20},
        {"type": "file", "path": "src"},
        {"type": "file", "path": "app.py", "startLine": 3, "endLine": 3},
    ]
    assert unknown == ["@nope.py", "@.git/config", "@../outside.py"]
    assert [label(a) for a in attachments] == ["app.py:10-20", "src", "app.py:3-3"]


def test_tab_offers_the_folders_entries(tmp_path: Path):
    (tmp_path / "app.py").write_text("")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / ".env").write_text("")
    (tmp_path / ".git").mkdir()
    assert list(candidates(tmp_path, "")) == ["app.py", "src/"]
    assert list(candidates(tmp_path, "src/m")) == ["src/main.py"]
    assert list(candidates(tmp_path, ".")) == [".env"]  # hidden once a dot is typed; never .git
    assert list(candidates(tmp_path, "../")) == []

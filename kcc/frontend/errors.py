"""Errors on bad `.uop` input: `path:line:col: error: message`, the line, and a caret.

Every refusal of the frontend is a `SourceError`; the CLI prints `render()` to stderr and exits 1,
so a user never sees a Python traceback for a malformed file.
"""

from __future__ import annotations

# A source line longer than this is shown as a window around the column, so a 1 MB line does
# not flood the terminal.
_SHOW_MAX = 160
_SHOW_BEFORE = 80


class SourceError(Exception):
    """A malformed or ill-typed input file, at a 1-based line and column.

    line 0 means the error concerns the whole file (it could not be read); then there is no
    column and no source line to show.
    """

    def __init__(self, path: str, line: int, col: int, message: str,
                 source_line: str | None = None):
        super().__init__(message)
        self.path = path
        self.line = line
        self.col = col
        self.message = message
        self.source_line = source_line

    @property
    def location(self) -> str:
        """`path:line:col` (or just `path` for an error about the whole file)."""
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.col}"

    def render(self) -> str:
        """The full report: the `path:line:col: error: message` line, the source line, a caret."""
        head = f"{self.location}: error: {self.message}"
        if self.line <= 0 or self.source_line is None:
            return head
        shown, caret_at = _window(self.source_line, max(self.col, 1) - 1)
        # Reuse the line's own tabs before the caret so it stays aligned under a tab stop.
        pad = "".join("\t" if ch == "\t" else " " for ch in shown[:caret_at])
        return f"{head}\n{shown}\n{pad}^"

    def __str__(self) -> str:
        return self.render()


def _window(text: str, at: int) -> tuple[str, int]:
    """The part of `text` to show and the caret's offset in it; unprintables become '?'."""
    prefix = ""
    if len(text) > _SHOW_MAX:
        start = max(0, min(at - _SHOW_BEFORE, len(text) - _SHOW_MAX))
        end = start + _SHOW_MAX
        prefix = "..." if start > 0 else ""
        suffix = "..." if end < len(text) else ""
        text = prefix + text[start:end] + suffix
        at = at - start + len(prefix)
    clean = "".join(ch if ch == "\t" or ch.isprintable() else "?" for ch in text)
    return clean, min(at, len(clean))

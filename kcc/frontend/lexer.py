"""The `.uop` lexer: bytes to lines, a line to tokens (hand-written, one compiled regex, linear).

A file is decoded as strict UTF-8 and split on `\\n` (a `\\r\\n` ending is accepted). Each line
is tokenized lazily, so a parser that stops at an error never scans the rest of a huge line.
Numbers are converted here: an INT is decimal or `0x` hex, optionally negative; a FLOAT is any
Python float literal (underscores between digits included); `inf`, `-inf`, `nan` are floats and
`true`, `false` are bools.
"""

from __future__ import annotations

import math

from kcc.frontend.errors import SourceError
from kcc.startup import regex

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Any

# Python's float literal grammar (Language Reference 2.4.6), with an optional leading minus.
_DIGITS = r"\d(?:_?\d)*"
_EXP = rf"[eE][+-]?{_DIGITS}"
_FLOAT = (rf"-?(?:(?:{_DIGITS})?\.{_DIGITS}(?:{_EXP})?|{_DIGITS}\.(?:{_EXP})?"
          rf"|{_DIGITS}{_EXP})")
# A number must not run into a name: `12abc` or `1.5.2` is one malformed token, not two.
_END = r"(?![A-Za-z0-9_.])"
# Alternatives in order of frequency (every one fails on its first character when it cannot
# match, so the order costs little but the common tokens come first).
# (kcc.startup.regex: re.compile's pattern, its compiled program loaded at start-up)
_TOKEN = regex(
    r"(?P<ws>[ \t]+)"
    r"|(?P<ref>%[A-Za-z0-9_][A-Za-z0-9_.]*)"
    r"|(?P<punct>[(),=:\[\]])"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    rf"|(?P<float>{_FLOAT}){_END}"
    rf"|(?P<hex>-?0[xX][0-9a-fA-F](?:_?[0-9a-fA-F])*){_END}"
    rf"|(?P<int>-?{_DIGITS}){_END}"
    r"|(?P<neginf>-inf)(?![A-Za-z0-9_.])"
    r"|(?P<string>\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
    r"|(?P<comment>\#.*)")
_NUMBERISH = regex(r"-?[0-9.][A-Za-z0-9_.+-]*")

# No dtype holds an integer outside [-2**63, 2**64): refuse it while lexing, before Python's
# int() is asked to convert a million digits (it refuses more than 4300 anyway).
INT_LO, INT_HI = -(1 << 63), (1 << 64) - 1
_MAX_DEC_DIGITS, _MAX_HEX_DIGITS = 40, 32
_EAGER_MAX = 4096
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_WORD_VALUES: dict[str, tuple[str, Any]] = {
    "true": ("bool", True), "false": ("bool", False),
    "inf": ("float", math.inf), "nan": ("float", math.nan),
}


class Token:
    """One token: kind is ref/ident/int/float/bool/string, a punctuation char, or eol.

    A plain slotted class rather than a dataclass: a 200,000-line file makes millions of them.
    """

    __slots__ = ("kind", "text", "col", "value")

    def __init__(self, kind: str, text: str, col: int, value: Any = None):
        self.kind = kind
        self.text = text
        self.col = col            # 1-based column of the first character
        self.value = value        # the converted literal (int, float, bool, str), if any

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.text!r}, {self.col})"


def decode_source(data: str | bytes, path: str) -> str:
    """The text of a file: bytes are decoded as strict UTF-8, else a SourceError at the byte."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        bol = data.rfind(b"\n", 0, e.start) + 1
        eol = data.find(b"\n", e.start)
        shown = data[bol:eol if eol >= 0 else len(data)].decode("utf-8", "replace")
        raise SourceError(path, line, e.start - bol + 1,
                          f"the file is not UTF-8 text (byte 0x{data[e.start]:02x} "
                          f"at offset {e.start})", shown) from None


def split_lines(text: str) -> list[str]:
    """The lines of a file, split on newlines only (a `\\r\\n` ending counts as one)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _is_hex2(s: str) -> bool:
    """s is two hex digits (re.fullmatch(r"[0-9a-fA-F]{2}", s) without re at start-up)."""
    return len(s) == 2 and s[0] in _HEX_DIGITS and s[1] in _HEX_DIGITS


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class Lexer:
    """The tokens of one line, produced on demand with two tokens of lookahead."""

    def __init__(self, text: str, lineno: int, path: str):
        self.text = text
        self.lineno = lineno
        self.path = path
        self.pos = 0
        self._i = 0                     # index of the next token in _toks
        # Scanned so far: a short line at once, a long one lazily, so a parser that stops at
        # an error early in a 1 MB line never scans the rest of it.
        self._toks: list[Token] = self._scan_all() if len(text) <= _EAGER_MAX else []

    def error(self, col: int, message: str) -> SourceError:
        """A SourceError at `col` of this line."""
        return SourceError(self.path, self.lineno, col, message, self.text)

    def peek(self, k: int = 0) -> Token:
        """The k-th token ahead (0 = next) without consuming it."""
        toks = self._toks
        while len(toks) <= self._i + k:
            toks.append(self._scan())
        return toks[self._i + k]

    def next(self) -> Token:
        """Consume and return the next token."""
        toks = self._toks
        if len(toks) <= self._i:
            toks.append(self._scan())
        self._i += 1
        return toks[self._i - 1]

    def _scan_all(self) -> list[Token]:
        """Every token of a short line, eol included (the fast path: most lines are short)."""
        text = self.text
        out: list[Token] = []
        pos = 0
        for m in _TOKEN.finditer(text):
            if m.start() != pos:           # finditer skipped a character no token matches
                self.pos = pos
                raise self._bad_char()
            kind = m.lastgroup
            if kind == "ref":
                out.append(Token("ref", m.group(), pos + 1))
            elif kind == "punct":
                t = m.group()
                out.append(Token(t, t, pos + 1))
            elif kind != "ws" and kind != "comment":
                out.append(self._token(kind, m.group(), pos + 1))
            pos = m.end()
        if pos != len(text):
            self.pos = pos
            raise self._bad_char()
        self.pos = pos
        out.append(Token("eol", "", pos + 1))
        return out

    def _scan(self) -> Token:
        text, match = self.text, _TOKEN.match
        while True:
            if self.pos >= len(text):
                return Token("eol", "", len(text) + 1)
            m = match(text, self.pos)
            if m is None:
                raise self._bad_char()
            self.pos = m.end()
            kind = m.lastgroup
            if kind not in ("ws", "comment"):
                return self._token(kind, m.group(), m.start() + 1)

    def _token(self, kind: str, text: str, col: int) -> Token:
        if kind == "ident":
            word = _WORD_VALUES.get(text)
            if word is not None:
                return Token(word[0], text, col, word[1])
            return Token("ident", text, col)
        if kind == "punct":
            return Token(text, text, col)
        if kind in ("int", "hex"):
            return Token("int", text, col, self._int(text, col))
        if kind == "float":
            value = float(text)
            if math.isinf(value):
                raise self.error(col, f"float literal {_clip(text)} overflows float64; "
                                      "write inf if you mean it")
            return Token("float", text, col, value)
        if kind == "neginf":
            return Token("float", text, col, -math.inf)
        if kind == "string":
            return Token("string", text, col, self._unescape(text, col))
        return Token(kind, text, col)

    def _int(self, text: str, col: int) -> int:
        digits = text.lstrip("-").replace("_", "")
        is_hex = digits[:2] in ("0x", "0X")
        ndig = len(digits) - 2 if is_hex else len(digits.lstrip("0"))
        if ndig <= (_MAX_HEX_DIGITS if is_hex else _MAX_DEC_DIGITS):
            value = int(text.replace("_", ""), 0 if is_hex else 10)
            if INT_LO <= value <= INT_HI:
                return value
        raise self.error(col, f"integer literal {_clip(text)} is out of range of every dtype "
                              "(int64 and uint64)")

    def _unescape(self, text: str, col: int) -> str:
        body = text[1:-1]
        if "\\" not in body:
            return body
        out: list[str] = []
        i = 0
        while i < len(body):
            ch = body[i]
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            esc = body[i + 1]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
            elif esc == "x" and _is_hex2(body[i + 2:i + 4]):
                out.append(chr(int(body[i + 2:i + 4], 16)))
                i += 4
            else:
                raise self.error(col + 1 + i, f"unknown escape \\{esc} in a string")
        return "".join(out)

    def _bad_char(self) -> SourceError:
        text, pos = self.text, self.pos
        ch = text[pos]
        if ch in "\"'":
            return self.error(pos + 1, "unterminated string")
        m = _NUMBERISH.match(text, pos)
        if m is not None and (ch != "." or len(m.group()) > 1):
            return self.error(pos + 1, f"malformed number {_clip(m.group())!r}")
        if ch == "%":       # a name of a character outside [A-Za-z0-9_.]: say which
            nxt = text[pos + 1:pos + 2]
            if not nxt or nxt.isspace():
                return self.error(pos + 1, "a % needs a name after it (%0, %x)")
            return self.error(pos + 2, f"character {nxt!r} cannot be in a %name (names are "
                                       "ASCII letters, digits, _ and .)")
        if not ch.isascii() and (ch.isalnum() or ch == "_"):
            return self.error(pos + 1, f"character {ch!r} cannot be in a name (names are ASCII "
                                       "letters, digits and _)")
        return self.error(pos + 1, f"unexpected character {ch!r}")


def _clip(text: str, n: int = 40) -> str:
    """A long token or name shortened for a message."""
    return text if len(text) <= n else text[:n] + "..."

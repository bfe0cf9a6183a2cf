"""The one top-level splitter of the Python side: text such as a TorchScript schema's argument list
(`Tensor self, int[1]? dim=None, *, ScalarType? dtype=None`) split at a separator that is not inside brackets or
quotes.

Used through schema_types.py by the capture (recorder.py) and by analyzer/loaders/gen_op_schemas.py, which imports it
from the capture package (capture/opprobe_capture); every copy of the package (the source tree, `cmake --install`'s
share/opprobe/capture, the Python package's _capture) carries it. Its C++ twin is
analyzer/loaders/split_top_level.h (SplitTopLevel); both keep the rules below and are pinned on the same cases by
tests/fixtures/split_top_level_cases.json.

Kept free of imports beyond the standard library (no torch) and of syntax newer than Python 3.6.
"""

_OPEN = "([{"
_CLOSE = ")]}"
_QUOTES = "\"'"
_SPACE = " \t\n\r"


def split_top_level(text, sep=","):
    """Splits `text` at every `sep` that is outside brackets and quotes.

    - `(`, `[` and `{` open a nesting level, `)`, `]` and `}` close one (a closer without an opener is ignored);
    - `'` or `"` opens a quoted run that ends at the same quote character; inside it a backslash escapes the next
      character, and brackets and separators do not count (an unterminated quote runs to the end of the text);
    - each piece is stripped of surrounding whitespace (space, tab, newline, carriage return);
    - text that is empty or only whitespace has no pieces; otherwise N top-level separators give N + 1 pieces,
      empty ones included (`a,,b` is ['a', '', 'b']; `a,` is ['a', '']).
    """
    if not text.strip(_SPACE):
        return []
    parts = []
    depth = 0
    quote = None
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1  # the escaped character cannot end the quote
            elif ch == quote:
                quote = None
        elif ch in _QUOTES:
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            if depth > 0:
                depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip(_SPACE))
            start = i + 1
        i += 1
    parts.append(text[start:].strip(_SPACE))
    return parts

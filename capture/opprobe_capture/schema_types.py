"""The declared argument types of an operator schema, read from its text: `aten::sum.dim_IntList(Tensor self,
int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor` declares `Tensor`, `int[1]?`, `bool` and
`ScalarType?`. PyTorch's own argument objects erase ScalarType, Layout and MemoryFormat to `int` (`str(arg.type)`), so
both readers of schemas take the declared types from the text: the capture (encoding.py, which names a dtype argument
as a dtype) and analyzer/loaders/gen_op_schemas.py (the .pt2 loader's table of schema defaults), which imports this
module from the package (the package's __init__ imports nothing, no torch).

Kept free of imports beyond the standard library and of syntax newer than Python 3.6.
"""

from .top_level import split_top_level


def argument_list(schema_text):
    """The text between the schema's first `(` and the `)` that matches it; None when there is no such pair."""
    open_at = schema_text.find("(")
    if open_at < 0:
        return None
    depth = 0
    for k in range(open_at, len(schema_text)):
        if schema_text[k] == "(":
            depth += 1
        elif schema_text[k] == ")":
            depth -= 1
            if depth == 0:
                return schema_text[open_at + 1:k]
    return None


def strip_alias(declared):
    """The type without its alias annotations: `Tensor(a!)` -> `Tensor`, `Tensor(a)[]` -> `Tensor[]`,
    `Tensor(a -> *)` -> `Tensor`."""
    out, depth = [], 0
    for ch in declared:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def declared_arguments(schema_text):
    """(declared type, name) of each argument of the schema, in order: alias annotations dropped, the keyword-only
    marker `*` and varargs `...` left out; the name is None for an argument without one (a few TorchScript builtins).
    Empty when the text has no argument list."""
    inside = argument_list(schema_text)
    if inside is None:
        return []
    out = []
    for piece in split_top_level(inside):
        if piece in ("*", "..."):
            continue
        decl = strip_alias(piece.split("=", 1)[0]).strip()
        if " " in decl:
            typ, name = decl.rsplit(None, 1)
            out.append((typ.strip(), name))
        else:
            out.append((decl, None))
    return out

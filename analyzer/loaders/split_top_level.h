// The one top-level splitter of the C++ side: text such as a `nn_module_stack` entry (`key,L['self'].layer1[0],
// torch.nn.Conv2d`) split at a separator that is not inside brackets or quotes. Its Python twin is
// capture/opprobe_capture/top_level.py (split_top_level), used by the capture and analyzer/loaders/gen_op_schemas.py;
// both keep the rules below and are pinned on the same cases by tests/fixtures/split_top_level_cases.json.
#pragma once

#include <string_view>
#include <vector>

namespace opprobe::analyzer {

// Splits `text` at every `sep` that is outside brackets and quotes:
//   - `(`, `[` and `{` open a nesting level, `)`, `]` and `}` close one (a closer without an opener is ignored);
//   - `'` or `"` opens a quoted run that ends at the same quote character; inside it a backslash escapes the next
//     character, and brackets and separators do not count (an unterminated quote runs to the end of the text);
//   - each piece is trimmed of surrounding whitespace (space, tab, newline, carriage return);
//   - text that is empty or only whitespace has no pieces; otherwise N top-level separators give N + 1 pieces,
//     empty ones included (`a,,b` is `a`, ``, `b`; `a,` is `a`, ``).
// The pieces are views into `text`.
std::vector<std::string_view> SplitTopLevel(std::string_view text, char sep);

}  // namespace opprobe::analyzer

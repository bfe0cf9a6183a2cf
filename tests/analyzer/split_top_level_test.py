#!/usr/bin/python3
"""The Python top-level splitter (capture/opprobe_capture/top_level.py) on the cases its C++ twin
(analyzer/loaders/split_top_level.h, tests/analyzer/split_top_level_test.cpp) is held to:
tests/fixtures/split_top_level_cases.json. Also: the capture and gen_op_schemas.py read schema types with the one
parser built on it (capture/opprobe_capture/schema_types.py).

Run by ctest (`split_top_level_python`) with Debian's /usr/bin/python3, whose PyTorch 1.13 both users import.
"""
import json
import os
import sys
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "capture"))
sys.path.insert(0, os.path.join(ROOT, "analyzer", "loaders"))

from opprobe_capture import top_level  # noqa: E402


def cases():
    with open(os.path.join(ROOT, "tests", "fixtures", "split_top_level_cases.json")) as f:
        return json.load(f)["cases"]


class SharedCases(unittest.TestCase):
    def test_every_case(self):
        all_cases = cases()
        self.assertGreaterEqual(len(all_cases), 20)
        for c in all_cases:
            with self.subTest(why=c["why"]):
                self.assertEqual(top_level.split_top_level(c["text"], c["sep"]), c["pieces"])

    def test_comma_is_the_default_separator(self):
        self.assertEqual(top_level.split_top_level("a, {b, c}"), ["a", "{b, c}"])


class OneSplitter(unittest.TestCase):
    def test_the_schema_parsing_uses_it(self):
        from opprobe_capture import schema_types
        self.assertIs(schema_types.split_top_level, top_level.split_top_level)


class OneSchemaParser(unittest.TestCase):
    """The capture and gen_op_schemas.py read a schema's declared types with the one parser (schema_types.py)."""

    def test_both_import_it(self):
        import gen_op_schemas
        from opprobe_capture import encoding, schema_types
        self.assertIs(encoding.declared_arguments, schema_types.declared_arguments)
        self.assertIs(gen_op_schemas.declared_arguments, schema_types.declared_arguments)

    def test_declared_types_of_a_schema(self):
        from opprobe_capture import schema_types
        text = ("aten::sum.dim_IntList(Tensor(a!) self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
                "-> Tensor(a!)")
        self.assertEqual(schema_types.declared_arguments(text),
                         [("Tensor", "self"), ("int[1]?", "dim"), ("bool", "keepdim"), ("ScalarType?", "dtype")])
        self.assertEqual(schema_types.declared_arguments("aten::split(Tensor(a -> *) self, SymInt[] sizes) -> "
                                                         "Tensor(a)[]"),
                         [("Tensor", "self"), ("SymInt[]", "sizes")])
        self.assertEqual(schema_types.declared_arguments("no argument list"), [])

    def test_the_capture_and_the_table_agree_on_every_aten_schema(self):
        import torch
        import gen_op_schemas
        from opprobe_capture import encoding
        n = 0
        for schema in torch._C._jit_get_all_schemas():
            if not schema.name.startswith("aten::"):
                continue
            by_name = gen_op_schemas.declared_types(str(schema))
            captured = encoding._declared_types(schema)
            self.assertEqual(len(captured), len(schema.arguments), str(schema))
            for a, t in zip(schema.arguments, captured):
                self.assertEqual(by_name.get(a.name, t), t, str(schema))
            n += 1
        self.assertGreater(n, 1000)

    def test_a_schema_with_escaped_quotes_in_its_defaults(self):
        # aten::_test_string_default's defaults hold `"`, `'` and `\` escaped: three arguments, not two.
        import gen_op_schemas
        text = 'aten::_test_string_default(Tensor dummy, str a="\\"\'\\\\", str b=\'"\\\'\\\\\') -> Tensor'
        self.assertEqual(gen_op_schemas.declared_types(text), {"dummy": "Tensor", "a": "str", "b": "str"})


if __name__ == "__main__":
    unittest.main()

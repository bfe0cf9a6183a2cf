#!/usr/bin/python3
"""The Python top-level splitter (capture/opprobe_capture/top_level.py) on the cases its C++ twin
(analyzer/loaders/split_top_level.h, tests/analyzer/split_top_level_test.cpp) is held to:
tests/fixtures/split_top_level_cases.json. Also: the capture and gen_op_schemas.py use this one splitter.

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
    def test_the_capture_uses_it(self):
        from opprobe_capture import recorder
        self.assertIs(recorder._split_top_level, top_level.split_top_level)

    def test_gen_op_schemas_uses_it(self):
        import gen_op_schemas
        self.assertIs(gen_op_schemas.split_top_level, top_level.split_top_level)

    def test_a_schema_with_escaped_quotes_in_its_defaults(self):
        # aten::_test_string_default's defaults hold `"`, `'` and `\` escaped: three arguments, not two.
        import gen_op_schemas
        text = 'aten::_test_string_default(Tensor dummy, str a="\\"\'\\\\", str b=\'"\\\'\\\\\') -> Tensor'
        self.assertEqual(gen_op_schemas.declared_types(text), {"dummy": "Tensor", "a": "str", "b": "str"})


if __name__ == "__main__":
    unittest.main()

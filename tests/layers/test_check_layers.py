#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The layering check's own test (ctest unit/layers_rules): scripts/check-layers.py run over small
trees written for each rule, its allow-lists given by the test, so that a rule that stops
firing, or fires on what it should let pass, fails here rather than silently in CI.

Usage: tests/layers/test_check_layers.py [REPO_ROOT]
"""
import importlib.util
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location("check_layers",
                                               os.path.join(ROOT, "scripts", "check-layers.py"))
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)

SPDX = "/* SPDX-License-Identifier: BSD-3-Clause */\n"


class Tree:
    """A scratch repository: files written under a temporary root."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        os.makedirs(os.path.join(self.root, "src"))
        os.makedirs(os.path.join(self.root, "include", "clusterpipe"))

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(SPDX + text)

    def module(self, name, body, header=""):
        """src/NAME.c including its own src/NAME.h."""
        self.write(f"src/{name}.h", header)
        self.write(f"src/{name}.c", f'#include "{name}.h"\n' + body)

    def check(self, allow_long=None, allow_calls=None):
        errors, _ = layers.check(self.root, allow_long or {}, allow_calls or {})
        return errors


class Case(unittest.TestCase):
    def tree(self):
        t = Tree()
        self.addCleanup(t.dir.cleanup)
        return t


class LongFiles(Case):
    def test_a_file_over_the_limit_fails(self):
        t = self.tree()
        t.module("util/big", "int x;\n" * layers.MAX_LINES)
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("src/util/big.c: 702 lines, more than 700", errors[0])

    def test_a_header_counts_too(self):
        t = self.tree()
        t.write("include/clusterpipe/clusterpipe.h", "int x;\n" * layers.MAX_LINES)
        errors = t.check()
        self.assertTrue(any("clusterpipe.h: 701 lines" in e for e in errors), errors)

    def test_the_limit_itself_passes(self):
        t = self.tree()
        t.module("util/edge", "int x;\n" * (layers.MAX_LINES - 2))  # + SPDX + include
        self.assertEqual(t.check(), [])

    def test_an_allowed_file_passes_and_a_stale_entry_fails(self):
        t = self.tree()
        t.module("lib/core/big", "int x;\n" * layers.MAX_LINES)
        self.assertEqual(t.check(allow_long={"src/lib/core/big.c": "being split"}), [])
        errors = t.check(allow_long={"src/lib/core/big.c": "being split", "src/lib/core/gone.c": "split"})
        self.assertEqual(errors, ["ALLOW_LONG: src/lib/core/gone.c does not exist: remove its entry"])
        t.module("lib/core/big", "int x;\n")
        errors = t.check(allow_long={"src/lib/core/big.c": "being split"})
        self.assertEqual(errors, ["ALLOW_LONG: src/lib/core/big.c has 3 lines now: remove its entry"])


class CallCircles(Case):
    def test_two_modules_calling_each_other_without_a_header_fail(self):
        t = self.tree()
        t.module("lib/core/a", "int cp__b(void);\nint cp__a(void) {\n    return cp__b() + 1;\n}\n")
        t.module("lib/core/b", "int cp__a(void);\nint cp__b(void) {\n    return cp__a();\n}\n")
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("src/lib: modules call each other around a circle", errors[0])
        self.assertIn("lib/core/a.c -> lib/core/b.c (cp__b)", errors[0])
        self.assertIn("lib/core/b.c -> lib/core/a.c (cp__a)", errors[0])

    def test_a_circle_of_three_fails(self):
        t = self.tree()
        t.module("bench/a", "void cp__b(void);\nvoid cp__a(void) {\n    cp__b();\n}\n")
        t.module("bench/b", "void cp__c(void);\nvoid cp__b(void) {\n    cp__c();\n}\n")
        t.module("bench/c", "void cp__a(void);\nvoid cp__c(void) {\n    cp__a();\n}\n")
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        for edge in ("bench/a.c -> bench/b.c", "bench/b.c -> bench/c.c", "bench/c.c -> bench/a.c"):
            self.assertIn(edge, errors[0])

    def test_calls_one_way_pass(self):
        t = self.tree()
        t.module("lib/core/low", "int cp__low(int x) {\n    return x;\n}\n")
        t.module("lib/core/high", "int cp__low(int);\nint cp__high(void) {\n    return cp__low(1);\n}\n")
        self.assertEqual(t.check(), [])

    def test_what_is_not_a_call_to_another_module_passes(self):
        t = self.tree()
        t.module("lib/core/a", "int cp__b(void);\n"
                          "int cp__a(void) {\n"
                          "    return cp__b();\n"
                          "}\n")
        # b: a's name in a macro's body, a comment and a string, as a member called, and a's
        # function stored, not called; and a static function of b's own.
        t.module("lib/core/b", "#define CALLS_A() cp__a()\n"
                          "struct ops { int (*cp__a)(void); };\n"
                          "int cp__a(void);\n"
                          "static int helper(void) {\n"
                          "    return 0;\n"
                          "}\n"
                          "int cp__b(void) {\n"
                          "    /* cp__a() here is a comment */\n"
                          "    const char *s = \"cp__a()\";\n"
                          "    struct ops o = {cp__a};\n"
                          "    (void)s;\n"
                          "    return o.cp__a != 0 && (&o)->cp__a != 0 ? helper() : 0;\n"
                          "}\n")
        self.assertEqual(t.check(), [])

    def test_a_call_of_a_static_function_of_ones_own_is_no_call_out(self):
        t = self.tree()
        t.module("lib/core/b", "int cp__c(void);\nint cp__b(void) {\n    return cp__c();\n}\n")
        t.module("lib/core/c", "static int cp__b(void) {\n    return 1;\n}\n"
                          "int cp__c(void) {\n    return cp__b();\n}\n")
        self.assertEqual(t.check(), [])

    def test_calls_across_folders_are_the_include_rules_business(self):
        t = self.tree()
        t.module("util/u", "int cp__u(void) {\n    return 0;\n}\n")
        t.module("lib/core/l", "int cp__u(void);\nint cp__l(void) {\n    return cp__u();\n}\n")
        t.module("util/v", "int cp__l(void);\nint cp__v(void) {\n    return cp__l();\n}\n")
        self.assertEqual(t.check(), [])

    def test_an_allowed_circle_passes_and_a_stale_entry_fails(self):
        t = self.tree()
        t.module("lib/core/a", "int cp__b(void);\nint cp__a(void) {\n    return cp__b();\n}\n")
        t.module("lib/core/b", "int cp__a(void);\nint cp__b(void) {\n    return cp__a();\n}\n")
        allowed = {("lib/core/a", "lib/core/b"): "being cut"}
        self.assertEqual(t.check(allow_calls=allowed), [])
        t.module("lib/core/b", "int cp__b(void) {\n    return 0;\n}\n")
        errors = t.check(allow_calls=allowed)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("lib/core/a, lib/core/b call each other no more", errors[0])

    def test_braces_that_do_not_balance_are_reported(self):
        t = self.tree()
        t.module("lib/core/a", "#ifdef X\nint cp__a(void) {\n#else\nint cp__a(int y) {\n#endif\n"
                          "    return 0;\n}\n")
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("src/lib/core/a.c: cannot read its functions", errors[0])


class IncludeRules(Case):
    def test_an_include_circle_still_fails(self):
        t = self.tree()
        t.write("src/lib/core/a.h", '#include "lib/core/b.h"\n')
        t.write("src/lib/core/b.h", '#include "lib/core/a.h"\n')
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("modules include each other around a circle: lib/core/a, lib/core/b", errors[0])


class Allocations(Case):
    def test_a_bare_allocation_in_the_library_fails(self):
        t = self.tree()
        t.module("lib/core/a", "void f(void) {\n    char *s = strdup(\"x\");\n    free(s);\n}\n")
        errors = t.check()
        self.assertEqual(len(errors), 2, errors)
        self.assertIn("src/lib/core/a.c:4: strdup(): the library allocates through lib/base/alloc.h", errors[0])
        self.assertIn("src/lib/core/a.c:5: free()", errors[1])

    def test_the_allocator_itself_members_comments_and_other_layers_pass(self):
        t = self.tree()
        t.module("lib/base/alloc", "void *g(unsigned n) {\n    return malloc(n);\n}\n")
        t.module("lib/core/b", "/* malloc(n) in a comment */\nvoid h(struct o *o) {\n"
                 "    o->free(o);\n    cp__free(o);\n    cp_reply_free(0);\n"
                 "    puts(\"free(\");\n}\n")
        t.module("bench/c", "void k(void *p) {\n    free(p);\n}\n")
        self.assertEqual(t.check(), [])


class Rooms(Case):
    def test_a_library_file_outside_the_rooms_fails(self):
        t = self.tree()
        t.module("lib/loose", "int cp__loose(void) {\n    return 0;\n}\n")
        t.write("src/lib/nowhere/x.h", "int x;\n")
        errors = t.check()
        self.assertEqual(len(errors), 3, errors)
        for e in errors:
            self.assertIn("the library's files live in its rooms", e)

    def test_includes_and_calls_down_pass(self):
        t = self.tree()
        t.module("lib/proto/low", "int cp__low(void) {\n    return 0;\n}\n", "int cp__low(void);\n")
        t.module("lib/core/high", '#include "lib/proto/low.h"\n'
                 "int cp__high(void) {\n    return cp__low();\n}\n")
        self.assertEqual(t.check(), [])

    def test_an_include_of_a_room_above_fails(self):
        t = self.tree()
        t.module("lib/core/high", "int cp__high(void) {\n    return 0;\n}\n")
        t.module("lib/proto/low", '#include "lib/core/high.h"\nint cp__low(void) {\n    return 1;\n}\n')
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn('src/lib/proto/low.c:3: #include "lib/core/high.h": room proto (rank 1) '
                      "includes room core (rank 5), not below it", errors[0])

    def test_a_call_to_a_room_above_fails_without_an_include(self):
        t = self.tree()
        t.module("lib/core/high", "int cp__high(void) {\n    return 0;\n}\n")
        t.module("lib/proto/low", "int cp__high(void);\nint cp__low(void) {\n    return cp__high();\n}\n")
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("lib/proto/low.c calls cp__high of src/lib/core/high.c: room proto (rank 1) "
                      "calls room core (rank 5), not below it", errors[0])

    def test_rooms_of_one_rank_may_not_call_each_other(self):
        t = self.tree()
        t.module("lib/net/n", "int cp__n(void) {\n    return 0;\n}\n")
        t.module("lib/map/m", "int cp__n(void);\nint cp__m(void) {\n    return cp__n();\n}\n")
        errors = t.check()
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("room map (rank 2) calls room net (rank 2), not below it", errors[0])


class TheRepository(unittest.TestCase):
    def test_the_tree_passes_with_its_allow_lists(self):
        errors, _ = layers.check(ROOT)
        self.assertEqual(errors, [])

    def test_every_allow_list_entry_has_a_reason(self):
        for key, why in list(layers.ALLOW_LONG.items()) + list(layers.ALLOW_CALL_CIRCLES.items()):
            self.assertTrue(isinstance(why, str) and len(why) > 10, key)


if __name__ == "__main__":
    unittest.main(verbosity=2)

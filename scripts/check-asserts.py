#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The assertion check (docs/architecture.md, "A test"), run by ctest as unit/asserts: reads the
C files of tests/ and fails on an assertion whose failure would print no values:

  1. assert_true(...) or assert_false(...) over a comparison (==, !=, <, <=, >, >=) at the top of
     its expression, alone or joined with &&: cmocka's assert_int_equal, assert_string_equal,
     assert_null, ... and tests/support/asserts.h's assert_int_ge, assert_double_lt, ... print
     both sides;
  2. assert_int_equal / assert_int_not_equal comparing a bare comparison with 0 or 1
     (assert_int_equal(n >= 1, 1)), which prints only 0 and 1.

A comparison inside a call or parentheses (assert_true(f(a == b))), or an expected value computed
by one (assert_int_equal(x, i < 3 ? A : B)), is fine. Comments and string literals are skipped.

Exit 0 and a one-line summary when none is found; 1 and every one found otherwise.
Usage: scripts/check-asserts.py [REPO_ROOT]
"""
import os
import re
import sys

CMP = re.compile(r"==|!=|<=|>=|(?<![-<>])<(?![<=])|(?<![-<>])>(?![>=])")
CALL = re.compile(r"\b(assert_true|assert_false|assert_int_equal|assert_int_not_equal)\s*\(")


def blank_comments_and_literals(s):
    """s with comments and the insides of string and character literals blanked (lengths and
    newlines kept, so offsets and line numbers stay)."""
    out = []
    i = 0
    while i < len(s):
        if s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = len(s) if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", s[i:j]))
            i = j
        elif s.startswith("//", i):
            j = s.find("\n", i)
            j = len(s) if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif s[i] in "\"'":
            q = s[i]
            j = i + 1
            while j < len(s) and s[j] != q:
                j += 2 if s[j] == "\\" else 1
            out.append(q + "_" * (j - i - 1) + q)
            i = j + 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def top_level(expr):
    """expr with everything inside parentheses, brackets and braces blanked."""
    depth = 0
    out = []
    for c in expr:
        if c in "([{":
            depth += 1
            out.append(" ")
        elif c in ")]}":
            depth -= 1
            out.append(" ")
        else:
            out.append(c if depth == 0 else " ")
    return "".join(out)


def split_args(body):
    depth = 0
    parts, cur = [], []
    for c in body:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def is_comparison(expr):
    """A bare comparison: one at the top level, with no ?: or || there."""
    top = top_level(expr)
    return CMP.search(top) is not None and "?" not in top and "||" not in top


def check_file(path):
    src = open(path, encoding="utf-8", errors="replace").read()
    clean = blank_comments_and_literals(src)
    found = []
    for m in CALL.finditer(clean):
        name = m.group(1)
        i = j = m.end()
        depth = 1
        while depth and j < len(clean):
            depth += clean[j] == "("
            depth -= clean[j] == ")"
            j += 1
        args = split_args(clean[i : j - 1])
        if name in ("assert_true", "assert_false"):
            bad = is_comparison(args[0])
        else:
            bad = len(args) == 2 and any(
                is_comparison(a) and b.strip() in ("0", "1") for a, b in (args, args[::-1])
            )
        if bad:
            line = src.count("\n", 0, m.start()) + 1
            text = " ".join(src[m.start() : j].split())
            found.append("%s:%d: %s" % (path, line, text))
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    tests = os.path.join(root, "tests")
    found, nfiles = [], 0
    for dirpath, _, files in sorted(os.walk(tests)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                nfiles += 1
                found += check_file(os.path.join(dirpath, f))
    for f in found:
        print(f)
    if found:
        print(
            "%d assertions print no values when they fail: use assert_int_equal, "
            "assert_string_equal, assert_null, ... or tests/support/asserts.h" % len(found)
        )
        return 1
    print("asserts: %d files, every comparison asserted prints both sides" % nfiles)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Only the API is exported: the dynamic symbols libclusterpipe.so defines (nm -D --defined-only)
are exactly the functions include/clusterpipe/clusterpipe.h declares, with the public headers it
includes ("clusterpipe/NAME.h", read from the same folder) and those of its folder that stand on
their own (clusterpipe/tls.h), each marked CP_API.

Fails, listing the names, on
  - a symbol the library exports that the header does not declare (a leaked internal name);
  - a function the header declares that the library does not export (a CP_API missing at the
    declaration, or a function declared and never defined);
  - a function declared without CP_API in front.
Names beginning with '_' are the toolchain's (_init, _edata, __bss_start, sanitizer hooks) and
are not the library's to export or hide: they are skipped and counted.

  usage: test_exports.py LIBCLUSTERPIPE_SO CLUSTERPIPE_H
"""
import os
import re
import subprocess
import sys


def header_functions(text):
    """{name: marked} for every function declared at file scope in the header."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # comments
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)  # continued preprocessor lines
    text = re.sub(r"^[ \t]*#[^\n]*", " ", text, flags=re.M)  # preprocessor lines
    text = text.replace('extern "C" {', " ")  # its '}' leaves depth 0 below; clamped
    decls, stmt, depth = {}, [], 0

    def finish():
        s = " ".join("".join(stmt).split())
        stmt.clear()
        if not s or s.startswith("typedef") or "(" not in s:
            return
        m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", s)
        if m:
            decls[m.group(1)] = s.startswith("CP_API ")

    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(depth - 1, 0)
            if depth == 0 and "{" in "".join(stmt):
                head = "".join(stmt).split("{", 1)[0]
                if "(" in head and not head.lstrip().startswith("typedef"):
                    stmt.clear()  # a function defined in the header (static inline): not exported
                    continue
        if ch == ";" and depth == 0:
            finish()
            continue
        stmt.append(ch)
    return decls


def public_headers(header):
    """The header, the public headers it includes ("clusterpipe/NAME.h"), then the other headers
    of its folder (headers of their own), in that order."""
    with open(header) as f:
        text = f.read()
    folder = os.path.dirname(header)
    names = re.findall(r'^[ \t]*#[ \t]*include[ \t]+"clusterpipe/([A-Za-z0-9_]+\.h)"', text, re.M)
    others = sorted(n for n in os.listdir(folder)
                    if n.endswith(".h") and n not in names and n != os.path.basename(header))
    return [header] + [os.path.join(folder, n) for n in names + others]


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            names.add(parts[2].split("@")[0])  # name@@VERSION
    return names


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    lib, header = sys.argv[1], sys.argv[2]
    decls = {}
    for path in public_headers(header):
        with open(path) as f:
            decls.update(header_functions(f.read()))
    syms = exported(lib)
    toolchain = sorted(n for n in syms if n.startswith("_"))
    ours = {n for n in syms if not n.startswith("_")}
    leaked = sorted(ours - set(decls))
    missing = sorted(set(decls) - ours)
    unmarked = sorted(n for n, marked in decls.items() if not marked)
    internal = sum(1 for n in ours if n.startswith("cp__"))
    ok = True
    if not decls:
        print(f"no function declarations found in {header}", file=sys.stderr)
        ok = False
    if leaked:
        print(f"{lib} exports {len(leaked)} name(s) the public header does not declare:",
              file=sys.stderr)
        for n in leaked:
            print(f"  {n}", file=sys.stderr)
        ok = False
    if missing:
        print(f"{header} declares {len(missing)} function(s) {lib} does not export:",
              file=sys.stderr)
        for n in missing:
            print(f"  {n}", file=sys.stderr)
        ok = False
    if unmarked:
        print(f"{header} declares {len(unmarked)} function(s) without CP_API:", file=sys.stderr)
        for n in unmarked:
            print(f"  {n}", file=sys.stderr)
        ok = False
    print(f"exports: {len(ours)} defined dynamic symbols ({internal} cp__), header declares "
          f"{len(decls)} functions; {len(toolchain)} toolchain symbol(s) skipped"
          + (f" ({', '.join(toolchain)})" if toolchain else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

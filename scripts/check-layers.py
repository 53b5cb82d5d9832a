#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The layering check (docs/architecture.md), run by CI: reads the #include "..." lines of src/
and include/clusterpipe/ and fails when

  1. a file includes a header of a layer above its own, or of another folder of its own rank;
  2. a layer above the library includes one of the library's private headers (src/lib/*.h):
     everything they need goes through the public clusterpipe/clusterpipe.h;
  3. the library includes a src/util/ header that has a .c (the installed library links no
     util object: only header-only helpers may be used there);
  4. two modules of one folder include each other, directly or around a circle (a module is
     x.c with its x.h);
  5. an include names a project header that does not exist.

Exit 0 and a one-line summary when all hold; 1 and every violation otherwise.
Usage: scripts/check-layers.py [REPO_ROOT]
"""
import os
import re
import sys

# Bottom to top. Folders of one rank may not include each other.
RANK = {
    "util": 0,
    "lib": 1,
    "orch": 2,
    "bench": 3,
    "report": 4,
    "scenario": 5,
    "compare": 5,
    "cli": 6,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def project_files(root):
    """(folder, path relative to root) of every .c/.h under src/ and include/clusterpipe/."""
    out = []
    for base, folder_of in (("src", None), ("include/clusterpipe", "lib")):
        top = os.path.join(root, base)
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                folder = folder_of or rel.split(os.sep)[1]
                out.append((folder, rel))
    return out


def resolve(inc):
    """The include's path relative to the repo root, and its layer folder."""
    if inc.startswith("clusterpipe/"):
        return os.path.join("include", inc), "lib"
    return os.path.join("src", inc), inc.split("/")[0]


def module_of(rel):
    return os.path.splitext(rel)[0]


def find_cycles(graph):
    """Strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    errors, nincludes = [], 0
    graphs = {}  # folder -> module -> set(modules it includes)
    files = project_files(root)
    for folder, rel in files:
        if folder not in RANK:
            errors.append(f"{rel}: folder '{folder}' has no layer (add it to RANK and the docs)")
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            target, tfolder = resolve(inc)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{rel}:{line}: #include \"{inc}\""
            if not os.path.exists(os.path.join(root, target)):
                if tfolder in RANK or inc.startswith("clusterpipe/"):
                    errors.append(f"{where}: no such project header")
                continue  # a system or test header spelled with quotes
            nincludes += 1
            if tfolder not in RANK:
                errors.append(f"{where}: '{tfolder}' has no layer")
                continue
            mine, theirs = RANK[folder], RANK[tfolder]
            if theirs > mine:
                errors.append(f"{where}: {folder} (layer {mine}) includes {tfolder} (layer {theirs}), "
                              "a layer above it")
            elif theirs == mine and tfolder != folder:
                errors.append(f"{where}: {folder} and {tfolder} are one layer and may not include "
                              "each other")
            if folder != "lib" and target.startswith(os.path.join("src", "lib") + os.sep):
                errors.append(f"{where}: the library's private header; use clusterpipe/clusterpipe.h")
            if folder == "lib" and tfolder == "util":
                if os.path.exists(os.path.join(root, os.path.splitext(target)[0] + ".c")):
                    errors.append(f"{where}: the library may use only header-only util helpers "
                                  "(it links no util object)")
            if tfolder == folder and rel.startswith("src" + os.sep):
                a, b = module_of(rel), module_of(target)
                if a != b:
                    graphs.setdefault(folder, {}).setdefault(a, set()).add(b)
    nmodules = 0
    for folder, graph in sorted(graphs.items()):
        nmodules += len(set(graph) | set().union(*graph.values()))
        for comp in find_cycles(graph):
            names = ", ".join(os.path.relpath(m, "src") for m in comp)
            errors.append(f"src/{folder}: modules include each other around a circle: {names}")
    if errors:
        for e in errors:
            print(e)
        print(f"check-layers: {len(errors)} violation(s)")
        return 1
    print(f"check-layers: ok ({len(files)} files, {nincludes} project includes, {len(RANK)} layers, "
          "no include circles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

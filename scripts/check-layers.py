#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The layering check (docs/architecture.md), run by CI: reads the #include "..." lines, the
length and the function definitions and calls of src/ and include/clusterpipe/ and fails when

  1. a file includes a header of a layer above its own, or of another folder of its own rank;
  2. a layer above the library includes one of the library's private headers (src/lib/*.h):
     everything they need goes through the public clusterpipe/clusterpipe.h;
  3. the library includes a src/util/ header that has a .c (the installed library links no
     util object: only header-only helpers may be used there);
  4. two modules of one folder include each other, directly or around a circle (a module is
     x.c with its x.h);
  5. an include names a project header that does not exist;
  6. a source file (.c or .h) under src/ or include/ has more than MAX_LINES lines, unless
     ALLOW_LONG names it with its reason (and an entry that no longer applies is an error too,
     so the list only ever shrinks);
  7. two modules of one folder call each other, directly or around a circle, whether or not
     they include each other's header: module A's .c calls a non-static function that module
     B's .c defines, and B's calls (through any modules of the folder) lead back to A.
     ALLOW_CALL_CIRCLES names the circles let through for now, each with its reason;
  8. a file of the library (src/lib/) other than base/alloc.c calls malloc, calloc, realloc,
     free, strdup, strndup or freeReplyObject itself: every allocation goes through
     lib/base/alloc.h, so that cp_set_allocators reaches all of it (read as rule 7 reads calls);
  9. a file of the library lies outside its rooms (src/lib/ROOM/, ROOMS below), or a room
     includes a header of, or calls a function defined in, a room that is not below it: rooms
     are ordered inside the library as RANK orders the layers, and rooms of one rank neither
     include nor call each other (calls read as rule 7 reads them).

How rule 7 reads C (a regex-level parser, not a compiler; see calls_of): comments, string and
character literals and preprocessor lines are blanked first. A definition is a `{` at brace
depth 0 whose declaration ends with `)` (a trailing __attribute__((...)) is skipped): the
identifier before the matching `(` is its name, and it is non-static when `static` is not among
the declaration's words. A call is an identifier followed by `(` inside a function body, not a
C keyword and not a member (`x.f(`, `x->f(`). Its limits: both sides of an #if are read (their
braces must balance, or the file is reported as unparsable); a call made by a macro's expansion
is not seen (macro bodies are preprocessor lines), nor one through a function pointer (storing
a callback is not a call); a function-like macro, or a function pointer called like a function,
that shares a non-static function's name would count as a call to it; a K&R definition or one
returning a function pointer is not recognised; only src/'s .c files are read, so a header's
static inline function calls nothing and defines nothing.

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
    "wire": 1,
    "orch": 2,
    "bench": 3,
    "migrate": 3,
    "report": 4,
    "scenario": 5,
    "compare": 5,
    "cli": 6,
}
# The library's rooms (src/lib/ROOM/), bottom to top; docs/architecture.md has a table for each.
ROOMS = {
    "base": 0,  # the allocator, the error table
    "proto": 1,  # RESP: reader, writer, replies and their arena; slot hash, SHA-1, glob
    "cmd": 2,  # what a command is: built-in table, COMMAND table, key specs
    "map": 2,  # the cluster's map: topology parsing, slot table
    "net": 2,  # a connection: socket, TLS, resolver
    "cache": 2,  # the client-side cache: its rules and its store
    "client": 3,  # the client's state: nodes, pipelines and their commands, fences, pools
    "pubsub": 4,  # connections in push mode: subscriptions, tracking links, push delivery
    "core": 5,  # the engine: batches, send, receive, the step, the map's refresh
    "api": 6,  # the calls on it: events, the built-in loop, async and blocking calls
    "scan": 7,  # cluster SCAN
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Rule 6: a file past this is two modules (docs/architecture.md, "Size and calls").
MAX_LINES = 700
# Files allowed past MAX_LINES for now: path relative to the repo root -> why. Keep it short:
# a generated table, say, or a split under way elsewhere.
ALLOW_LONG = {
}
# Rule 7: call circles let through for now: the circle's modules as a sorted tuple of paths under
# src/ without .c, e.g. ("lib/exec", "lib/fence") -> why. Empty: the tree has none.
ALLOW_CALL_CIRCLES = {
}


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


# ---- rule 7: the C reader ----------------------------------------------------------------------

# Comments, string literals and character literals, in one pass (a "//" inside a string is not a
# comment, a quote inside a comment starts no string).
LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# A preprocessor line with its backslash continuations.
DIRECTIVE = re.compile(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.M)
CALL = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
TRAILING_ATTRIBUTE = re.compile(r'__attribute__\s*\(\(.*\)\)\s*$', re.S)
NOT_CALLS = frozenset("""if for while switch return sizeof _Alignof alignof _Generic
    _Static_assert static_assert __attribute__ __typeof__ typeof __builtin_offsetof
    __builtin_expect __builtin_unreachable do else case goto""".split())


def blank(m):
    """The match's text with everything but its newlines as spaces (line numbers stay)."""
    return re.sub(r'[^\n]', ' ', m.group(0))


def plain_code(text):
    """The text with comments, literals and preprocessor lines blanked."""
    return DIRECTIVE.sub(blank, LEXEMES.sub(blank, text))


def definition_name(decl):
    """(name, is_static) of the function a declaration before a `{` at depth 0 defines, or None
    when it defines no function (a struct, an enum, an initializer)."""
    decl = TRAILING_ATTRIBUTE.sub("", decl.rstrip()).rstrip()
    if not decl.endswith(")"):
        return None
    depth = 0
    for i in range(len(decl) - 1, -1, -1):
        if decl[i] == ")":
            depth += 1
        elif decl[i] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r'([A-Za-z_]\w*)\s*$', decl[:i])
                if m is None or m.group(1) in NOT_CALLS:
                    return None
                return m.group(1), re.search(r'\bstatic\b', decl[:i]) is not None
    return None


def calls_of(text):
    """What one .c file defines and calls: (non-static definitions, every definition, calls,
    error). The calls are the identifiers called inside its function bodies; error is None, or
    why the file could not be read (braces that do not balance)."""
    code = plain_code(text)
    exported, defined, calls = set(), set(), set()
    depth, decl_start, body_start = 0, 0, None
    for m in re.finditer(r'[{};]', code):
        ch, at = m.group(0), m.start()
        if ch == "{":
            if depth == 0:
                d = definition_name(code[decl_start:at])
                if d is not None:
                    defined.add(d[0])
                    if not d[1]:
                        exported.add(d[0])
                    body_start = at
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                line = code.count("\n", 0, at) + 1
                return exported, defined, calls, f"line {line}: a '}}' closes nothing"
            if depth == 0:
                if body_start is not None:
                    for c in CALL.finditer(code, body_start, at):
                        before = code[:c.start()].rstrip()
                        if c.group(1) not in NOT_CALLS and not before.endswith((".", "->")):
                            calls.add(c.group(1))
                    body_start = None
                decl_start = at + 1
        elif depth == 0:
            decl_start = at + 1
    if depth != 0:
        return exported, defined, calls, "braces do not balance (an #if with a brace per branch?)"
    return exported, defined, calls, None


def call_graph(root, files):
    """Per folder of src/: module -> {module it calls: sorted names of the functions called},
    and the parse errors."""
    parsed, errors = {}, []
    for folder, rel in files:
        if not rel.endswith(".c") or not rel.startswith("src" + os.sep):
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            exported, defined, calls, err = calls_of(f.read())
        if err is not None:
            errors.append(f"{rel}: cannot read its functions: {err}")
        parsed.setdefault(folder, {})[module_of(rel)] = (exported, defined, calls)
    graphs = {}
    for folder, mods in parsed.items():
        owner = {}
        for mod, (exported, _, _) in mods.items():
            for name in exported:
                owner[name] = mod
        g = graphs.setdefault(folder, {})
        for mod, (_, defined, calls) in mods.items():
            for name in calls - defined:
                target = owner.get(name)
                if target is not None and target != mod:
                    g.setdefault(mod, {}).setdefault(target, set()).add(name)
    return graphs, errors


def call_circle_errors(graphs, allowed):
    """Rule 7's violations: the circles not in `allowed` (ALLOW_CALL_CIRCLES), and its entries
    that no longer match a circle."""
    errors, used = [], set()
    for folder, g in sorted(graphs.items()):
        for comp in find_cycles({a: set(b) for a, b in g.items()}):
            key = tuple(sorted(os.path.relpath(m, "src") for m in comp))
            if key in allowed:
                used.add(key)
                continue
            inside = set(comp)
            edges = [f"{os.path.relpath(a, 'src')}.c -> {os.path.relpath(b, 'src')}.c "
                     f"({', '.join(sorted(g[a][b]))})"
                     for a in sorted(comp) for b in sorted(g.get(a, {})) if b in inside]
            errors.append(f"src/{folder}: modules call each other around a circle: "
                          + "; ".join(edges))
    for key in sorted(set(allowed) - used):
        errors.append(f"ALLOW_CALL_CIRCLES: {', '.join(key)} call each other no more: remove the "
                      "entry")
    return errors


def long_file_errors(root, files, allowed):
    """Rule 6's violations: the long files not in `allowed` (ALLOW_LONG), and its entries that
    no longer apply."""
    errors = []
    for _, rel in files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            n = len(f.read().splitlines())
        key = rel.replace(os.sep, "/")
        if n > MAX_LINES and key not in allowed:
            errors.append(f"{rel}: {n} lines, more than {MAX_LINES}: split it into modules of one "
                          "noun each (docs/architecture.md)")
        elif n <= MAX_LINES and key in allowed:
            errors.append(f"ALLOW_LONG: {rel} has {n} lines now: remove its entry")
    known = {rel.replace(os.sep, "/") for _, rel in files}
    for key in sorted(set(allowed) - known):
        errors.append(f"ALLOW_LONG: {key} does not exist: remove its entry")
    return errors


# Rule 8: what the library may call only through lib/base/alloc.h, and the one file that calls it.
BARE_ALLOC = {"malloc", "calloc", "realloc", "free", "strdup", "strndup", "freeReplyObject"}
ALLOC_FILE = os.path.join("src", "lib", "base", "alloc.c")
BARE_CALL = re.compile(r'(?<![\w.>])(' + "|".join(sorted(BARE_ALLOC)) + r')\s*\(')


def bare_alloc_errors(root, files):
    """Rule 8's violations: calls of libc's allocator in src/lib outside alloc.c."""
    errors = []
    for folder, rel in files:
        if folder != "lib" or rel == ALLOC_FILE or not rel.startswith("src" + os.sep):
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            code = plain_code(f.read())
        for m in BARE_CALL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            errors.append(f"{rel}:{line}: {m.group(1)}(): the library allocates through "
                          "lib/base/alloc.h (cp__malloc ..., cp_reply_free), so that "
                          "cp_set_allocators reaches every allocation")
    return errors


def room_of(rel):
    """The library room of a path under src/lib/ ("" when it lies in no room), or None for a
    path outside src/lib/."""
    parts = rel.split(os.sep)
    if parts[:2] != ["src", "lib"]:
        return None
    return parts[2] if len(parts) > 3 and parts[2] in ROOMS else ""


def room_errors(files, includes, calls):
    """Rule 9's violations: library files outside the rooms, and includes and calls from a room
    to one that is not below it. includes: (file, line, include, target) of the library's files;
    calls: the library's module call graph (call_graph's graphs["lib"])."""
    errors = []
    for _, rel in files:
        if room_of(rel) == "":
            errors.append(f"{rel}: the library's files live in its rooms (src/lib/ROOM/, one of "
                          f"{', '.join(ROOMS)})")

    def upward(a, b):
        ra, rb = room_of(a), room_of(b)
        return ra and rb and ra != rb and ROOMS[rb] >= ROOMS[ra]

    for rel, line, inc, target in includes:
        if upward(rel, target):
            errors.append(f"{rel}:{line}: #include \"{inc}\": room {room_of(rel)} (rank "
                          f"{ROOMS[room_of(rel)]}) includes room {room_of(target)} (rank "
                          f"{ROOMS[room_of(target)]}), not below it")
    for a, targets in sorted(calls.items()):
        for b, names in sorted(targets.items()):
            if upward(a + ".c", b + ".c"):
                errors.append(f"{a}.c calls {', '.join(sorted(names))} of {b}.c: room "
                              f"{room_of(a + '.c')} (rank {ROOMS[room_of(a + '.c')]}) calls room "
                              f"{room_of(b + '.c')} (rank {ROOMS[room_of(b + '.c')]}), not below it")
    return errors


def check(root, allow_long=None, allow_calls=None):
    """Every rule over the tree at root: (violations, summary). The allow-lists default to the
    script's own (a test passes others)."""
    allow_long = ALLOW_LONG if allow_long is None else allow_long
    allow_calls = ALLOW_CALL_CIRCLES if allow_calls is None else allow_calls
    errors, nincludes = [], 0
    graphs = {}  # folder -> module -> set(modules it includes)
    lib_includes = []  # (file, line, include, target) of the library's files, for rule 9
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
            if room_of(rel) is not None:
                lib_includes.append((rel, line, inc, target))
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
    errors += long_file_errors(root, files, allow_long)
    calls, parse_errors = call_graph(root, files)
    errors += parse_errors + call_circle_errors(calls, allow_calls)
    errors += bare_alloc_errors(root, files)
    errors += room_errors(files, lib_includes, calls.get("lib", {}))
    ncalls = sum(len(t) for g in calls.values() for t in g.values())
    summary = (f"{len(files)} files, {nincludes} project includes, {len(RANK)} layers, no include "
               f"circles, no file over {MAX_LINES} lines ({len(allow_long)} allowed), {ncalls} "
               f"calls between modules, no call circles, every library allocation through alloc.h, "
               f"{len(ROOMS)} library rooms each calling only down")
    return errors, summary


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    errors, summary = check(os.path.abspath(root))
    if errors:
        for e in errors:
            print(e)
        print(f"check-layers: {len(errors)} violation(s)")
        return 1
    print(f"check-layers: ok ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

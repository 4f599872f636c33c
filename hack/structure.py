#!/usr/bin/env python3
"""The shape of the workspace's Rust code, as docs/architecture.md promises it.

Reports, for non-test code (a file's `#[cfg(test)]` part, `tests.rs` files and the `tests/`,
`benches/` and `examples/` folders are test code) that is ours (a file whose first line says
`@generated`, such as tonic's output from vendored `.proto` files, is not):

* import circles between the modules of a crate: module A uses a name of module B (a `use` or a
  path `crate::b::..`, `super::..`), and B, directly or through others, uses A. A module and the
  modules it contains are one place (a parent re-exporting its child is no circle);
* source files over 600 lines;
* functions over 120 lines.

Usage: hack/structure.py [--check]   (--check: exit 1 when anything is reported; `make lint`)

It reads the code as text (paths and braces), which is enough for this code base's style; it
runs no compiler.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MAX_FILE_LINES = 600
MAX_FN_LINES = 120
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")
STRING = re.compile(r'"(\\.|[^"\\])*"')
CHAR = re.compile(r"'(\\.|[^'\\])'")


def crates():
    """(crate name, its src directory) for every workspace crate with a library or binary."""
    found = []
    for base in ("crates", "tests"):
        for name in sorted(os.listdir(os.path.join(ROOT, base))):
            src = os.path.join(ROOT, base, name, "src")
            if os.path.isdir(src):
                found.append((name, src))
    return found


def non_test_lines(path):
    """The file's lines up to its `#[cfg(test)]` part."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if re.match(r"^\s*#\[cfg\(test\)\]", line):
            return lines[:i]
    return lines


def is_test_file(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or f"{os.sep}tests{os.sep}" in path


def is_generated(path):
    """Whether a tool wrote the file (`@generated` on its first line)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return "@generated" in f.readline()


def module_files(src):
    """{module path tuple: file} of one crate's non-test source files (`lib.rs`/`main.rs` is ())."""
    modules = {}
    for directory, _, files in os.walk(src):
        for name in files:
            path = os.path.join(directory, name)
            if not name.endswith(".rs") or is_test_file(path):
                continue
            rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
            if rel[0] == "bin":
                continue
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            modules[tuple(rel)] = path
    return modules


def references(path, module):
    """The module paths (as written, resolved to absolute tuples) that the file's code names."""
    refs = set()
    for line in non_test_lines(path):
        code = line.split("//")[0]
        for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", code):
            refs.add(absolute(m.group(1).split("::"), module))
        # `use crate::a::{b, c::d}`: the braces' first names are modules too, when they exist.
        m = re.match(r"\s*(pub(\([^)]*\))?\s+)?use\s+(crate|super|self)((?:::\w+)*)::\{(.*)\}", code)
        if m:
            prefix = [m.group(3)] + [p for p in m.group(4).split("::") if p]
            for item in m.group(5).split(","):
                first = item.strip().split("::")[0].strip()
                if first and first[0].islower():
                    refs.add(absolute(prefix + [first], module))
    return refs


def absolute(parts, module):
    """A path written in `module` (`crate::a::b`, `super::c`, `self::d`) as an absolute tuple."""
    if parts[0] == "crate":
        return tuple(parts[1:])
    base = list(module)
    i = 0
    while i < len(parts) and parts[i] in ("super", "self"):
        if parts[i] == "super":
            base = base[:-1]
        i += 1
    return tuple(base + parts[i:])


def owner(path_tuple, modules):
    """The deepest module that `path_tuple` (a module path, maybe ending in an item) lies in."""
    for n in range(len(path_tuple), -1, -1):
        if path_tuple[:n] in modules:
            return path_tuple[:n]
    return ()


def related(a, b):
    """One contains the other (or they are the same)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def circles(name, src):
    modules = module_files(src)
    edges = {m: set() for m in modules}
    for module, path in modules.items():
        for ref in references(path, module):
            target = owner(ref, modules)
            if not related(module, target):
                edges[module].add(target)
    # Tarjan's strongly connected components.
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [[os.path.relpath(modules[m], ROOT) for m in component] for component in found]


def long_functions(path):
    lines = non_test_lines(path)
    found = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            code = CHAR.sub("''", STRING.sub('""', lines[j])).split("//")[0]
            for c in code:
                if c == "{":
                    depth += 1
                    started = True
                elif c == "}":
                    depth -= 1
            if started and depth == 0:
                break
            if not started and code.rstrip().endswith(";"):
                break
            j += 1
        if started and j - i + 1 > MAX_FN_LINES:
            found.append((m.group(6), i + 1, j - i + 1))
    return found


def main():
    check = "--check" in sys.argv[1:]
    problems = 0
    for name, src in crates():
        for component in circles(name, src):
            print(f"circle in {name}: " + " -> ".join(component))
            problems += 1
        for directory, _, files in os.walk(src):
            for file in sorted(files):
                path = os.path.join(directory, file)
                if not file.endswith(".rs") or is_test_file(path) or is_generated(path):
                    continue
                rel = os.path.relpath(path, ROOT)
                n = len(non_test_lines(path))
                if n > MAX_FILE_LINES:
                    print(f"{rel}: {n} lines (non-test) > {MAX_FILE_LINES}")
                    problems += 1
                for fn, line, length in long_functions(path):
                    print(f"{rel}:{line}: fn {fn} is {length} lines > {MAX_FN_LINES}")
                    problems += 1
    print(f"structure: {problems} finding(s) (import circles, files over {MAX_FILE_LINES} lines, "
          f"functions over {MAX_FN_LINES} lines; non-test code)")
    return 1 if check and problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check that the core crate's modules respect their layers.

Reads every `crate::...`, `super::...` and `self::...` path in the non-test
code of `crates/fabriclab-core/src` (test modules, doc comments and comments
are skipped), resolves each to the source file it names, and fails when

- a module uses a module of a higher layer (the table `LAYERS` below, which
  is the picture `lib.rs` documents), or
- two or more files import each other in a cycle.

A file's own submodules (`mod x;` declarations) are not imports; a parent
re-exporting a child (`pub use x::Y`) is. Paths are resolved to the longest
prefix that is a file, so `crate::config::FabricSpec` names
`config/mod.rs` even when the item is defined in a child it re-exports.

What it cannot see: a method called on a value (`spec.validate()`) whose
`impl` block sits in a higher layer. The one such block,
`topology/validate.rs`'s `impl FabricSpec`, is called only from the
topology layer and above (the configuration layer's own entry point is
`FabricSpec::parse_toml`).

Usage: python3 scripts/check_layers.py [--graph] [--src DIR]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "crates" / "fabriclab-core" / "src"

# Lowest first. A module may use its own layer and the layers before it.
LAYERS: list[tuple[str, ...]] = [
    ("units", "wire", "rng", "error", "interrupt", "numfmt"),
    ("engine",),
    ("config",),
    ("topology",),
    ("net",),
    ("sim",),
    ("traffic",),
    ("mpi",),
    ("nccl",),
    ("tools",),
    ("report",),
    ("option_fields", "bench", "front", "bin", "lib"),
]

PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)(::\{[^;]*?\})?")


def rank(top: str) -> int:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise SystemExit(f"check_layers: module {top!r} is in no layer; add it to LAYERS")


def module_path(file: Path) -> list[str]:
    rel = file.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts


def file_of(parts: list[str]) -> Path | None:
    """The file of the longest prefix of `parts` that is a module."""
    for n in range(len(parts), 0, -1):
        base = SRC.joinpath(*parts[:n])
        for cand in (base.with_suffix(".rs"), base / "mod.rs"):
            if cand.is_file():
                return cand
    return None


def strip_tests_and_comments(text: str) -> str:
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("#[cfg(test)]"):
            # Skip the attribute and the item it guards (a braced block or one line).
            i += 1
            depth = 0
            started = False
            while i < len(lines):
                depth += lines[i].count("{") - lines[i].count("}")
                started = started or "{" in lines[i]
                i += 1
                if (started and depth <= 0) or (not started and lines[i - 1].rstrip().endswith(";")):
                    break
            continue
        code = line.split("//", 1)[0]
        out.append(code)
        i += 1
    return "\n".join(out)


def imports(file: Path) -> set[Path]:
    me = module_path(file)
    # `super` is relative to the module; for a mod.rs or a top file the
    # module is the file's module path.
    text = strip_tests_and_comments(file.read_text())
    found: set[Path] = set()
    for m in PATH.finditer(text):
        head, rest, group = m.group(1), m.group(2), m.group(3)
        segs = [s for s in rest.split("::") if s]
        if head == "crate":
            base: list[str] = []
        elif head == "self":
            base = list(me)
        else:
            ups = 1
            while segs and segs[0] == "super":
                segs.pop(0)
                ups += 1
            base = list(me)[: max(0, len(me) - ups)]
        targets = [base + segs]
        if group:
            for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", group):
                targets.append(base + segs + [name])
        for t in targets:
            f = file_of(t)
            if f is not None and f != file:
                found.add(f)
    # `pub use child::X` inside a mod.rs: a re-export of a child is an import.
    if file.name == "mod.rs" or file.parent == SRC:
        for m in re.finditer(r"\bpub(?:\([a-z]+\))?\s+use\s+([a-z_][a-z0-9_]*)::", text):
            f = file_of(me + [m.group(1)])
            if f is not None and f != file:
                found.add(f)
    return found


def top(file: Path) -> str:
    parts = module_path(file)
    return parts[0] if parts else "lib"


def is_ancestor(a: Path, b: Path) -> bool:
    """Whether file `a` is the module file of a directory holding `b`."""
    pa, pb = module_path(a), module_path(b)
    return a.name in ("mod.rs", "lib.rs") and len(pa) < len(pb) and pb[: len(pa)] == pa


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components with more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]

    def visit(v: Path) -> None:
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
            comp: list[Path] = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    global SRC
    if "--src" in sys.argv:
        SRC = Path(sys.argv[sys.argv.index("--src") + 1]).resolve()
    files = sorted(SRC.rglob("*.rs"))
    graph = {f: imports(f) for f in files}
    problems: list[str] = []
    for f, deps in graph.items():
        for d in sorted(deps):
            if rank(top(d)) > rank(top(f)):
                problems.append(
                    f"{f.relative_to(SRC)} (layer {top(f)}) uses {d.relative_to(SRC)} (higher layer {top(d)})"
                )
    # A module and its own parent (`super::Net`, `pub use child::X`) use each
    # other by design; cycles are sought among the other edges.
    siblings = {f: {d for d in deps if not is_ancestor(d, f) and not is_ancestor(f, d)} for f, deps in graph.items()}
    for comp in cycles(siblings):
        problems.append("import cycle: " + " <-> ".join(str(c.relative_to(SRC)) for c in comp))
    if "--graph" in sys.argv:
        for f, deps in graph.items():
            print(f.relative_to(SRC), "->", ", ".join(str(d.relative_to(SRC)) for d in sorted(deps)))
    for p in problems:
        print(f"check_layers: {p}")
    if problems:
        return 1
    print(f"check_layers: {len(files)} files, layers respected, no import cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())

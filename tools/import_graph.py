"""Draw the import graph by floor (the package's families, then the page and app.py) and name every arrow that
points up or closes a circle.

    python tools/import_graph.py          # floors, upward arrows, circles (exit 1 if any)
    python tools/import_graph.py --edges  # every module-to-module arrow as well

Imports inside functions count: a lazy import is still a dependency. `TYPE_CHECKING` imports count too,
since a type names the module it comes from.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "chatharuhi_core"
# lowest first: a module may import its own floor or any floor below it
FLOORS = [
    ("ground", {"config", "errors", "tokens", "embedding", "jsonl", "deprecated", "i18n", "locale"}),
    ("roles", {"roles"}),
    ("chat", {"chat"}),
    ("scene", {"scene"}),
    ("data", {"data"}),
    ("web", {"web"}),
    ("entry", {"cli", "cli_parser", "cli_story", "__main__", "__init__"}),
    ("page", set()),  # page/: the Gradio page's parts (outside the package: the library never imports Gradio)
    ("app", set()),  # app.py: builds the page and launches it
]
PAGE = "page"
APP = "app"


def floor_of(module: str) -> int:
    if module == APP:
        return len(FLOORS) - 1
    if module == PAGE or module.startswith(PAGE + "."):
        return len(FLOORS) - 2
    head = module.split(".")[1] if module.count(".") else "__init__"
    for i, (_, names) in enumerate(FLOORS):
        if head in names:
            return i
    raise SystemExit(f"{module} sits on no floor: add it to FLOORS")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names}
    return {t for t in found if any(t == top or t.startswith(top + ".") for top in (PACKAGE, PAGE, APP))}


def graph() -> dict[str, set[str]]:
    paths = [*(ROOT / PACKAGE).rglob("*.py"), *(ROOT / PAGE).glob("*.py"), ROOT / f"{APP}.py"]
    files = {module_name(p): p for p in paths}
    edges = {}
    for name, path in files.items():
        targets = set()
        for t in imports_of(path, name):
            while t not in files and "." in t:  # `from .x import name` names a module or something in it
                t = t.rpartition(".")[0]
            if t in files and t != name:
                targets.add(t)
        edges[name] = targets
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", action="store_true", help="print every arrow")
    args = ap.parse_args()
    edges = graph()
    for i, (floor, _) in enumerate(FLOORS):
        names = sorted(m for m in edges if floor_of(m) == i)
        print(f"{floor:7} {len(names):3} modules")
    tops = {PACKAGE, PAGE}  # a package's __init__ may gather what is below it
    up = sorted((a, b) for a, targets in edges.items() for b in targets
                if floor_of(b) > floor_of(a) and not a.endswith("__init__") and a not in tops)
    rings = circles({a: set(t) for a, t in edges.items() if a not in tops})
    if args.edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print(f"  {a} -> {b}")
    print(f"\n{len(up)} arrows pointing up")
    for a, b in up:
        print(f"  {a} -> {b}")
    print(f"{len(rings)} circles")
    for ring in rings:
        print("  " + " <-> ".join(ring))
    return 1 if up or rings else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The dependency table of docs/architecture.md, enforced.

Checks, for every folder under src/:
  1. its row in the table names exactly the crosspoint_* libraries its CMakeLists.txt links;
  2. every `#include "<folder>/..."` in its sources (cpu/ and cuda/ included) names its own
     folder or one it may use: the folders of its row and, since libraries link PUBLIC, the
     folders of their rows in turn. `cli` builds the binary and may use every folder.
Prints one line per violation and exits 1 when there is any. Standard library only.

usage: check_dependencies.py REPO_ROOT
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)
DEPS = re.compile(r"crosspoint_library\(\s*NAME\s+crosspoint_(\w+)\s+DIR\s+\S+\s+DEPS\s+([^)]*)\)", re.S)


def table_rows(doc_path):
    """{folder: set of crosspoint folders} from the '| library | links |' table."""
    rows = {}
    in_table = False
    for line in open(doc_path, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] == "library" and cells[1] == "links":
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                break
            if set(cells[0]) <= set("-"):
                continue
            links = re.sub(r"\(.*?\)", "", cells[1])  # "(+ CUDA runtime ...)" notes
            rows[cells[0]] = {w.strip() for w in links.split(",") if w.strip()}
    return rows


def cmake_deps(src):
    """{folder: set of crosspoint folders} from each src/<folder>/CMakeLists.txt."""
    deps = {}
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder, "CMakeLists.txt")
        if not os.path.isfile(path):
            continue
        for name, body in DEPS.findall(open(path, encoding="utf-8").read()):
            deps[name] = set(re.findall(r"crosspoint_(\w+)", body))
    return deps


def closure(folder, rows, seen=None):
    seen = set() if seen is None else seen
    for dep in rows.get(folder, ()):
        if dep not in seen:
            seen.add(dep)
            closure(dep, rows, seen)
    return seen


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    src = os.path.join(root, "src")
    folders = {f for f in os.listdir(src) if os.path.isdir(os.path.join(src, f))}
    table = table_rows(os.path.join(root, "docs", "architecture.md"))
    linked = cmake_deps(src)
    problems = []
    for folder in sorted(folders - {"cli"}):
        if folder not in table:
            problems.append(f"docs/architecture.md: no row for src/{folder}")
            continue
        documented = table[folder] & folders
        if folder in linked and documented != linked[folder]:
            problems.append(f"src/{folder}: the table says it links {sorted(documented)}, "
                            f"its CMakeLists.txt links {sorted(linked[folder])}")
    rows = {f: table.get(f, set()) & folders for f in folders}
    rows["cli"] = folders - {"cli"}
    for folder in sorted(folders):
        allowed = {folder} | closure(folder, rows)
        for dirpath, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, name)
                for used in sorted(set(INCLUDE.findall(open(path, encoding="utf-8", errors="replace").read()))):
                    if used in folders and used not in allowed:
                        problems.append(f"{os.path.relpath(path, root)}: includes {used}/, which src/{folder} "
                                        f"may not use (docs/architecture.md: {sorted(allowed - {folder})})")
    for p in problems:
        print(p)
    print(f"check_dependencies: {len(folders)} folders, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

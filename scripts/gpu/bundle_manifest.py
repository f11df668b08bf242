#!/usr/bin/env python3
"""The bundle's manifest.json: commit, uncommitted files, build root, date, binaries, libraries, tools.

usage: bundle_manifest.py STAGE ROOT COMMIT NUM_UNCOMMITTED
"""
import datetime, json, os, sys
stage, root, commit, dirty = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
files = lambda d: sorted(os.listdir(os.path.join(stage, d)))
json.dump({"commit": commit, "uncommitted_files": dirty, "build_root": root,
           "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "binaries": files("libexec"), "libraries": files("lib"), "tools": files("tools")},
          open(os.path.join(stage, "manifest.json"), "w"), indent=1)

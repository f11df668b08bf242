#!/usr/bin/env python3
"""Prints the folder of libcublasLt.so.13 from a pip wheel (torch's nvidia-cublas), if any.
Runs on the GPU machine from the bundle's tools/ (env.sh).
"""
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for r in roots:
    for hit in glob.glob(os.path.join(r, "nvidia", "*", "lib", "libcublasLt.so.13*")):
        print(os.path.dirname(hit)); raise SystemExit

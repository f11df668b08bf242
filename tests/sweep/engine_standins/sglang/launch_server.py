"""`python -m sglang.launch_server ...` stand-in (../standin_server.py says what it is)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import standin_server  # noqa: E402

parser = argparse.ArgumentParser(prog="sglang.launch_server")
parser.add_argument("--model-path", required=True)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=30000)
parser.add_argument("--served-model-name")
parser.add_argument("--context-length", type=int)
parser.add_argument("--mem-fraction-static", type=float)
parser.add_argument("--random-seed", type=int)
parser.add_argument("--enable-metrics", action="store_true")
parser.add_argument("--max-running-requests", type=int)
parser.add_argument("--disable-cuda-graph", action="store_true")
args = parser.parse_args()
standin_server.check_model_dir(args.model_path)
standin_server.serve("sglang", args.host, args.port, args.served_model_name or args.model_path,
                     args.context_length or 2048, metrics=args.enable_metrics)

#!/usr/bin/env python3
"""The study on the GPU in one device call (issues #6 and #7), from the bundle that
scripts/gpu_bundle.sh made here:
  1. unpack .gpu_bundle/crosspoint-gpu.tar.xz, nvidia-smi, the manifest
  2. tests:  test_kernels_cuda, test_model_cuda and test_determinism (when bundled), a short log
  3. ceilings.py (--only ceilings or --ceilings FILE: the GPU's read bandwidth, fp16 and fp8
     matmul rates, measured by shared/tools/gpu; otherwise crosspoint hwinfo measures them)
  4. check:  (checkpoints are written in the background from the start) a random 2-layer Qwen2 with Qwen2.5-7B widths, greedy crosspoint generate --device cuda
             vs transformers (benchmarks/gpu/check_generate_vs_transformers.py); meanwhile the
             7B checkpoints are written (benchmarks/gpu/make_random_checkpoint.py, timed)
  5. sweep:  crosspoint sweep --device cuda over the precisions with the ready checkpoints,
             concurrency 1,10,100, ShareGPT sample (bundle), 100,200,200 prompts, replies of the
             dataset's length with --ignore-eos, --max-model-len 4096, no eval
  6. peers:  shared/tools/gpu/torch_peer.py compiled decode at batch 1, fp16/fp8/int4, if time is left
Parts not in the default set (name them in --only):
  sanitize: compute-sanitizer memcheck over test_kernels_cuda, racecheck over the kernels that
            reduce through shared memory
  hwinfo:   crosspoint hwinfo --device cuda --json (the engine's own ceilings), beside ceilings.py
  decode:   bench_decode_step over the 7B checkpoints (decode step at batch 1..128, context 512,
            prefill 2,048, per-kernel breakdown, roofline), then bench_gemm (the linears alone) and
            bench_attention unless DECODE_MICRO=0
  gemm:     bench_gemm and bench_attention alone (the kernels of decode without the 7B checkpoints)
  tp:       bench_tensor_parallel per 7B checkpoint: the decode step whole on GPU 0 and over TP_SIZE
            (every GPU) ranks through NCCL at TP_BATCHES (1,16,64), the step's collectives alone,
            NCCL's all-reduce bus bandwidth (tensor_parallel.json); a one-GPU machine runs one rank
  kvattn:   bench_attention --fp8: the default attention kernels on an e4m3 KV cache beside fp16
            (decode batch 1-256 x context 512-4096, prefill), against the read ceiling (needs ceilings or hwinfo)
  quantpeer: torch_peer.py --part quant (graph-replayed fp8/int4 decode at batch 1/8/32/64)
  profile:  ncu over bench_gemm --profile-shapes (PROFILE_KERNELS regex, PROFILE_ROWS list of M, PROFILE_COUNT, PROFILE_S)
  attnprofile: ncu over bench_attention --shape (ATTN_SHAPES, default 64:512,128:2048): the decode
            attention kernels' (default and balanced) throughput, memory, occupancy and stall sections;
            ATTN_PROFILE_KERNELS (an ncu kernel-name regex) and ATTN_SHAPES=all (the whole bench, its
            prefill lines too) profile others, e.g. prefill_tensor_core
  kernels:  ncu over one eager decode step per precision (--kernels-batches, 1): every kernel's
            time alone and DRAM bytes read, grouped by scripts/gpu/kernel_breakdown.py (kernels.json)
  soak:     scripts/soak.py on the 7B fp16 checkpoint (SOAK_STREAMS, SOAK_MINUTES per round, SOAK_KV_BLOCKS;
            SOAK_DETACH=1: in its own session, collected by a following call with --only soakwait) into $OUT/soak.json
  stash:    copy the carried files under .gguf_parts/ (the default model's GGUF in parts, scripts/gpu/split_gguf.sh)
            into /tmp/crosspoint-gguf-parts, which a warm machine keeps for the next call; needs no bundle
  gpuvscpu: benchmarks/gpu/check_gpu_vs_cpu.py on the default model's real weights (the stashed parts
            joined and checked against their sha256): serve --device cuda against --device cpu per
            precision (fp16, W8A8-FP8, W4A16 RTN and GPTQ act-order, group 64) and KV dtype, into
            $OUT/gpu_vs_cpu.json
  servercheck: benchmarks/gpu/check_server_determinism.py over the 7B checkpoints: the same request
            sequentially, in copies sent together and amid load, default and --deterministic servers
  quantize: crosspoint quantize of the 7B fp16 checkpoint to each of QUANT_SCHEMES (w8a8-fp8,w8a8-int8)
            with --device cuda, then --device cpu, timed; the two outputs' safetensors compared byte
            for byte (quantize.json). w4a16 (GPTQ act-order, group 128, GPTQ_CALIB_SAMPLES (128) packed
            samples of GPTQ_CALIB_TOKENS (2048) tokens) on the GPU only; QUANT_LIMIT_S (200) per run
--deterministic-too: the decode step and the sweep run a second time with --deterministic
         (decode_step_deterministic.json, the sweep-deterministic folder), for the mode's cost.
--baseline TAR: another bundle's crosspoint-gpu.tar.xz (carried, e.g. an older commit's); its
         bench_decode_step runs just before and just after this one's with the same arguments
         (decode_step_baseline.json, decode_step_baseline_after.json), so old and new binaries
         are compared in one call.
Every step has its own time limit inside BUDGET_S (560 s), and $OUT/results.json is written
on every exit (steps with their exit codes and seconds, ceilings, checkpoint timings, the check,
every sweep cell's headline numbers, start-up facts, peers), SIGTERM and SIGINT included.

  run(command="python3 scripts/gpu_study.py", carry=[".gpu_bundle"], timeout_s=600)
  run(command="python3 scripts/gpu_study.py --only sweep --precisions w4a16", carry=[".gpu_bundle"])

Options: --only tests,check,sweep,peers (default; also sanitize,hwinfo,ceilings,decode,tp,quantpeer; peers only
         when >= 150 s are left)   --peer-modes fp16,fp8,int4   --decode-batches 1,8,32,64,128
         --precisions fp16,w8a8-fp8,w4a16   --kv-cache-dtypes auto,fp8   --concurrency 1,10,100   --num-prompts 100,200,200
         --dataset sharegpt|random|prefix_repetition (random: 218 input / 220 output tokens, the study's means;
         prefix_repetition: NUM_PREFIXES (8) prefixes of PREFIX_LEN (1024) tokens, SUFFIX_LEN (128) + PREFIX_OUTPUT_LEN (128))
         --prefix-caching off,on (the sweep's prefix-caching axis)
         --tensor-parallel-sizes 1,2 (the sweep's tensor-parallel axis: labels like fp16-tp2, one GPU a rank)
         --layers N (7B shape with N layers: a quicker sweep)   --enforce-eager   --bisect N
         --gpu-memory-utilization F   --ceilings FILE (reuse; skips ceilings.py)
         --resume-sweep DIR (a sweep folder from an earlier call, e.g. unpacked from its logs.tar.xz into
         an ignored folder that the call carries: its finished cells and hwinfo.json are kept, so a
         sweep longer than one call runs over several)
         --kernels-batches 1 (kernels: the batches ncu times)   --baseline TAR   --deterministic-too
         --cpu-dry-run (here, without a GPU: tiny checkpoints, CPU servers; tests the flow)
Environment: SWEEP_FROM_FP16=1 (only the fp16 checkpoint is written and the sweep quantises it on the GPU,
         GPTQ with GPTQ_CALIB_SAMPLES (128) samples; SWEEP_EVAL_SAMPLES (0) the sweep's quality samples), BUDGET_S, MEMORY_BUDGET (sweep --memory-budget, e.g. 24GB: a smaller GPU's capacity), MAX_NUM_SEQS
         (sweep --max-num-seqs), TEST_LIMIT_S, TEST_BINARIES (which test binaries, in order, space- or comma-separated), ATTN_SHAPES, DECODE_VARIANT_ARGS (decode: bench_decode_step again with
         these flags, e.g. --tight-attention-bound, into decode_step_variant.json), PROFILE_KERNELS, PROFILE_ROWS, PROFILE_COUNT, PROFILE_S, TEST_KERNELS_FILTER (a gtest filter for test_kernels_cuda), TEST_MODEL_FILTER (one for test_model_cuda), SANITIZE_{MEMCHECK,RACECHECK,DETERMINISM}_{S,FILTER}, DECODE_MICRO=0,
         ATTENTION_MICRO=0 (gemm/decode: bench_gemm without bench_attention),
         BENCH_GEMM_ARGS, BENCH_GEMM_S, BENCH_ATTENTION_ARGS, PEER_MIN_LEFT_S, CKPT_DIR, KERNELS_S,
         OUT (default: out-gpu-study in the checkout).
$OUT gets: results.json, run.log, report.md, report.html, study.json, logs.tar.xz (every log,
the sweep's cells, servers and figures, the check's JSON).
"""
from __future__ import annotations

import collections
import filecmp
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
WORK = "/tmp/crosspoint-study"          # logs and the sweep; packed into $OUT/logs.tar.xz at the end
BUNDLE_DIR = "/tmp/crosspoint-gpu"
GGUF_PARTS = "/tmp/crosspoint-gguf-parts"
GGUF_FILE = "/tmp/crosspoint-gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
SOAK_DIR = "/tmp/crosspoint-soak-detached"
BASELINE_DIR = "/tmp/crosspoint-gpu-baseline"
BASELINE_UNPACK = "/tmp/baseline-unpack"
KEEP_BACK_S = 60   # kept back for results.json and packing the logs (a big sweep folder takes half a minute)
OK_LINE = r"^\[       OK"  # a gtest test that passed
NCU_SECTIONS = ["--section", "SpeedOfLight", "--section", "MemoryWorkloadAnalysis", "--section", "Occupancy",
                "--section", "LaunchStats", "--section", "SchedulerStats", "--section", "WarpStateStats",
                "--section", "ComputeWorkloadAnalysis", "--section", "InstructionStats"]
# A new process group for each timed command, as GNU timeout makes (process_group needs Python 3.11).
NEW_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}

# The options, as the bash version's `case`: NAME VALUE options, flags, and their defaults.
VALUE_OPTIONS = {"--only": "only", "--precisions": "precisions", "--kv-cache-dtypes": "kv_dtypes",
                 "--prefix-caching": "prefix_caching", "--tensor-parallel-sizes": "tp_sizes",
                 "--concurrency": "concurrency",
                 "--num-prompts": "num_prompts", "--dataset": "dataset", "--layers": "layers",
                 "--bisect": "bisect", "--gpu-memory-utilization": "gpu_mem", "--ceilings": "ceilings_given",
                 "--resume-sweep": "resume_sweep", "--peer-modes": "peer_modes",
                 "--decode-batches": "decode_batches", "--kernels-batches": "kernels_batches",
                 "--baseline": "baseline"}
FLAG_OPTIONS = {"--enforce-eager": "eager", "--cpu-dry-run": "dry_run", "--deterministic-too": "det_too"}
DEFAULTS = {"only": "tests,check,sweep,peers", "precisions": "fp16,w8a8-fp8,w4a16",
            "kv_dtypes": "auto",             # --kv-cache-dtypes auto,fp8: the sweep's KV-cache axis
            "prefix_caching": "default",     # --prefix-caching off,on: the sweep's prefix-caching axis
            "tp_sizes": "1",                 # --tensor-parallel-sizes 1,2: the sweep's tensor-parallel axis
            "concurrency": "1,10,100", "num_prompts": "100,200,200", "dataset": "sharegpt",
            "layers": "0", "bisect": "0", "gpu_mem": "0.9", "ceilings_given": "",
            "resume_sweep": "",              # a previous call's sweep folder (carried); its finished cells are kept
            "peer_modes": "fp16,fp8,int4", "decode_batches": "1,8,32,64,128", "kernels_batches": "1",
            "baseline": "",                  # an older bundle whose bench_decode_step runs first, same arguments
            "eager": False,
            "dry_run": False,                # the same flow on a machine without a GPU (tiny model, CPU servers)
            "det_too": False}                # decode step and sweep again with --deterministic


class Options:
    """The command line, parsed as the bash version did (last one wins, no abbreviations)."""

    def __init__(self, argv):
        self.__dict__.update(DEFAULTS)
        i = 0
        while i < len(argv):
            arg = argv[i]
            if arg in VALUE_OPTIONS:
                if i + 1 >= len(argv):
                    print(f"gpu_study.py: {arg} needs a value (see --help)", file=sys.stderr)
                    sys.exit(1)
                setattr(self, VALUE_OPTIONS[arg], argv[i + 1])
                i += 2
                continue
            if arg in FLAG_OPTIONS:
                setattr(self, FLAG_OPTIONS[arg], True)
            elif arg in ("-h", "--help"):
                print((__doc__ or "").rstrip("\n"))
                sys.exit(0)
            else:
                print(f"gpu_study.py: unknown option {arg} (see --help)")
                sys.exit(2)
            i += 1


# ---------------------------------------------------------------- small helpers

def env(name, default=""):
    """${NAME:-DEFAULT}: the variable, or DEFAULT when it is unset or empty."""
    return os.environ.get(name) or default


def as_int(text):
    """The integer `[ A -lt B ]` would read, or None where test(1) would fail."""
    try:
        return int(str(text).strip())
    except ValueError:
        return None


def comma_list(text):
    """IFS=, read -r -a: fields between commas; one trailing empty field dropped."""
    fields = text.split(",")
    if fields and fields[-1] == "":
        fields.pop()
    return fields


def now():
    """date +%s."""
    return int(time.time())


def is_exec(path):
    """[ -x PATH ]."""
    return os.access(path, os.X_OK)


def read_lines(path):
    """The file's lines (without their newlines), or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def grep(path, pattern, invert=False):
    """grep -E PATTERN PATH (or -v): the matching lines; none for a file that is missing."""
    rx = re.compile(pattern)
    return [line for line in read_lines(path) or [] if bool(rx.search(line)) != invert]


def grep_count(path, pattern):
    """grep -c PATTERN PATH as text: the count, or "" for a file that is missing."""
    if read_lines(path) is None:
        return ""
    return str(len(grep(path, pattern)))


def tail(path, n):
    """tail -N PATH: its last N lines (none when it is missing)."""
    lines = read_lines(path)
    return lines[-n:] if lines else []


def last_line(path, width=None):
    """$(tail -1 PATH | cut -c1-WIDTH)."""
    lines = tail(path, 1)
    line = lines[0] if lines else ""
    return line[:width] if width else line


def ls_line(folder):
    """$(ls FOLDER | tr '\\n' ' '): the names, each followed by a space."""
    try:
        return "".join(name + " " for name in sorted(os.listdir(folder)) if not name.startswith("."))
    except OSError:
        return ""


def cells_in(folder):
    """$(ls FOLDER 2>/dev/null | grep -c json): the sweep cells of a sweep's cells folder."""
    try:
        return len([name for name in os.listdir(folder) if not name.startswith(".") and "json" in name])
    except OSError:
        return 0


def copy_file(src, dst):
    """cp SRC DST 2>/dev/null: True when copied."""
    try:
        shutil.copy(src, dst)
        return True
    except OSError:
        return False


def manifest_commit(bundle):
    """The commit in BUNDLE/manifest.json, or "" (its error on stderr) when there is none."""
    try:
        with open(os.path.join(bundle, "manifest.json")) as f:
            return json.load(f)["commit"]
    except Exception:
        traceback.print_exc()
        return ""


def ncu_path():
    """$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | tail -1), or ""."""
    found = shutil.which("ncu") or ""
    if not found:
        candidates = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
        found = candidates[-1] if candidates else ""
    return found


def soak_running():
    """pgrep -f scripts/soak.py: a process other than this one whose command line matches."""
    rx = re.compile(r"scripts/soak.py")
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", errors="replace")
        except OSError:
            continue
        if rx.search(cmdline):
            return True
    return False


class Stop(SystemExit):
    """Raised in the main thread by SIGTERM, SIGINT or SIGHUP: finish() runs, then the exit."""


# ---------------------------------------------------------------- the study

class Study:
    """The shared state of one call: options, paths, the start time, the steps file, the log."""

    def __init__(self, opts, out, start, budget_s):
        self.o = opts
        self.out = out
        self.start = start
        self.budget_s = budget_s
        self.log_path = os.path.join(out, "run.log")
        self.ckpt = env("CKPT_DIR", "/tmp/crosspoint-ckpt")
        self.steps = os.path.join(WORK, "steps.jsonl")
        self.prec_list = comma_list(opts.precisions)
        # SWEEP_FROM_FP16=1: only the fp16 checkpoint is written; the sweep quantises it on the GPU.
        self.from_fp16 = env("SWEEP_FROM_FP16", "0") == "1"
        self.tokenizer = f"{BUNDLE_DIR}/tokenizers/qwen2.5"
        self.sweep_device = "cuda"
        self.gen_config = ["--config", "qwen2.5-7b"]
        if opts.dry_run:  # tests this script here: tiny checkpoints, CPU servers, the tiny tokenizer
            self.tokenizer = f"{ROOT}/tests/fixtures/bench/tiny_tokenizer"
            self.sweep_device = "cpu"
            self.gen_config = ["--config", "tiny", "--backend", "numpy"]
        self.ceilings = ""      # ceilings.py's or the given file, once there
        self.hwinfo = ""        # crosspoint hwinfo's measurement, once there
        self.gen_thread = None  # the checkpoint writer
        self.lock = threading.RLock()  # reentrant: the signal handler takes it too
        self.procs = set()      # commands running now, for the signal handler
        self.stopping = False
        # Every call starts from an empty $WORK (a warm machine keeps /tmp between calls): no log or
        # sweep cell of an earlier call leaks into this one's results; --resume-sweep is the way to continue.
        shutil.rmtree(WORK, ignore_errors=True)
        if os.path.lexists(WORK):
            os.remove(WORK)
        os.makedirs(f"{WORK}/logs", exist_ok=True)
        os.makedirs(self.ckpt, exist_ok=True)
        open(self.steps, "w").close()

    # ------------------------------------------------------------ time, log and steps

    def want(self, part):
        """Whether --only names PART."""
        return f",{part}," in f",{self.o.only},"

    def left_s(self):
        """Seconds left of BUDGET_S."""
        return self.budget_s - (now() - self.start)

    def limit(self, seconds):
        """A step's time limit: SECONDS, or less so that 60 s of BUDGET_S are left (5 s at least)."""
        left = max(self.budget_s - (now() - self.start) - KEEP_BACK_S, 5)
        n = as_int(seconds)
        return n if n is not None and n < left else left

    def write(self, text, echo=True):
        """Append TEXT to run.log and (ECHO) print it: tee -a run.log."""
        if not text:
            return
        with self.lock:
            if echo:
                sys.stdout.write(text)
                sys.stdout.flush()
            with open(self.log_path, "a", encoding="utf-8", errors="replace") as f:
                f.write(text)

    def show(self, lines):
        """Lines through tee -a run.log."""
        self.write("".join(line + "\n" for line in lines))

    def log(self, message):
        """One line, prefixed with the seconds since the start, to stdout and run.log."""
        self.write(f"[{now() - self.start}s] {message}\n")

    def step(self, name, rc, seconds, note=""):
        """One line of results.json's "steps" (steps.jsonl), and its line in the log."""
        note = note.replace("\\", "").replace('"', "'")
        note = "".join(c for c in note if ord(c) > 0o37)  # stays a JSON string
        with open(self.steps, "a", encoding="utf-8") as f:
            f.write('{"step": "%s", "rc": %s, "seconds": %s, "note": "%s"}\n' % (name, rc, seconds, note))
        self.log(f"step {name}: rc={rc} in {seconds} s {note}")

    def run(self, cmd, log, timeout=None, err_log=None, append=False, extra_env=None):
        """CMD with its output in LOG (stderr in ERR_LOG if given), its exit code back. With TIMEOUT
        (seconds; 0 = none), as GNU timeout: its own process group, which gets SIGTERM (then
        SIGCONT) when the time is up, and rc 124."""
        if self.stopping:
            return 143
        env_ = dict(os.environ, **extra_env) if extra_env else None
        timed = timeout is not None
        with open(log, "ab" if append else "wb") as out:
            err = open(err_log, "wb") if err_log else None
            try:
                errf = err or out
                if timed and timeout < 0:
                    errf.write(f"timeout: invalid time interval '{timeout}'\n"
                               "Try 'timeout --help' for more information.\n".encode())
                    return 125
                try:
                    proc = subprocess.Popen(cmd, stdout=out, stderr=err or subprocess.STDOUT, env=env_,
                                            **(NEW_GROUP if timed else {}))
                except OSError as e:
                    why = "Permission denied" if isinstance(e, PermissionError) else "No such file or directory"
                    if timed:
                        errf.write(f"timeout: failed to run command '{cmd[0]}': {why}\n".encode())
                    else:
                        errf.write(f"gpu_study.py: {cmd[0]}: {why}\n".encode())
                    return 126 if isinstance(e, PermissionError) else 127
                with self.lock:
                    self.procs.add((proc, timed))
                try:
                    try:
                        rc = proc.wait(timeout=timeout or None)
                    except subprocess.TimeoutExpired:
                        for sig in (signal.SIGTERM, signal.SIGCONT):
                            try:
                                os.killpg(proc.pid, sig)
                            except OSError:
                                pass
                        proc.wait()
                        return 124
                finally:
                    with self.lock:
                        self.procs.discard((proc, timed))
                return 128 - rc if rc < 0 else rc
            finally:
                if err:
                    err.close()

    def on_signal(self, signum, frame):
        """SIGTERM, SIGINT, SIGHUP: pass it on to the running commands, then stop (finish() runs)."""
        if self.stopping:
            return
        self.stopping = True
        with self.lock:
            procs = list(self.procs)
        for proc, own_group in procs:
            try:
                if own_group:
                    os.killpg(proc.pid, signal.SIGTERM)
                else:
                    proc.terminate()
            except OSError:
                pass
        raise Stop(128 + signum)

    # ------------------------------------------------------------ the parts

    def copy_gguf_parts(self, errors_to_log):
        """find ROOT/.gguf_parts -type f -exec cp {} GGUF_PARTS/ \\;  (find's exit code back)."""
        src = f"{ROOT}/.gguf_parts"
        if not os.path.isdir(src):
            if errors_to_log:
                self.write(f"find: '{src}': No such file or directory\n", echo=False)
            return 1
        for folder, _, files in os.walk(src):
            for name in sorted(files):
                path = os.path.join(folder, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                try:
                    shutil.copy(path, GGUF_PARTS)
                except OSError as e:
                    if errors_to_log:
                        self.write(f"cp: {e}\n", echo=False)
        return 0

    def stash(self):
        """Copy the carried .gguf_parts/ files into GGUF_PARTS, kept by a warm machine."""
        os.makedirs(GGUF_PARTS, exist_ok=True)
        rc = self.copy_gguf_parts(errors_to_log=True)
        self.step("stash", rc, 0, ls_line(GGUF_PARTS))

    def unpack(self):
        """Unpack the bundle into /tmp, import its env.sh, log the GPU, bundle, disk and memory."""
        self.log("== unpack the bundle")
        t = now()
        with open(self.log_path, "ab") as log:
            ok = subprocess.run(["tar", "-C", "/tmp", "-xJf", f"{ROOT}/.gpu_bundle/crosspoint-gpu.tar.xz"],
                                stderr=log).returncode == 0
        if not ok:
            self.step("unpack", 1, now() - t,
                      "no .gpu_bundle/crosspoint-gpu.tar.xz: run scripts/gpu_bundle.sh and carry .gpu_bundle")
            return False
        self.source_env_sh(f"{BUNDLE_DIR}/env.sh")
        # The test binaries were compiled with fixture paths under the build machine's checkout.
        try:
            with open(f"{BUNDLE_DIR}/manifest.json") as f:
                build_root = json.load(f)["build_root"]
        except Exception:
            build_root = ""
        if build_root and not os.path.exists(build_root):
            try:
                os.makedirs(os.path.dirname(build_root), exist_ok=True)
                os.symlink(ROOT, build_root)
            except OSError as e:
                print(f"gpu_study.py: cannot link {build_root} to {ROOT}: {e}", file=sys.stderr)
        self.step("unpack", 0, now() - t, f"cublasLt from {env('CROSSPOINT_CUBLASLT_DIR', 'NOT FOUND')}")
        self.write(self.machine_facts())
        return True

    def source_env_sh(self, path):
        """. env.sh: sourced by bash, the variables it exports or changes imported into os.environ."""
        script = 'env -0; printf "\\0"; . "$1" >&2; rc=$?; env -0; exit $rc'
        r = subprocess.run(["bash", "-c", script, "bash", path], stdout=subprocess.PIPE)
        entries = r.stdout.decode("utf-8", errors="surrogateescape").split("\0")
        gap = entries.index("") if "" in entries else len(entries)
        def parse(items):
            return dict(item.split("=", 1) for item in items if "=" in item)
        before, after = parse(entries[:gap]), parse(entries[gap + 1:])
        for name, value in after.items():
            if before.get(name) != value and name != "_":
                os.environ[name] = value
        for name in before:
            if name not in after and name != "_":
                os.environ.pop(name, None)

    def machine_facts(self):
        """nvidia-smi, the bundle's manifest, disk, memory and the libraries crosspoint loads."""
        def capture(cmd, extra_env=None):
            try:
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=dict(os.environ, **extra_env) if extra_env else None)
            except OSError:
                return "", f"gpu_study.py: {cmd[0]}: command not found\n"
            return (r.stdout.decode("utf-8", errors="replace"), r.stderr.decode("utf-8", errors="replace"))
        text = ""
        out, err = capture(["nvidia-smi", "--query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,"
                            "clocks.mem", "--format=csv"])
        text += err + out
        try:
            with open(f"{BUNDLE_DIR}/manifest.json") as f:
                m = json.load(f)
            bundle = f"{m['commit'][:10]} {m['date_utc']} {' '.join(m['binaries'])}"
        except Exception:
            text += traceback.format_exc()
            bundle = ""
        text += f"bundle: {bundle}\n"
        out, err = capture(["df", "-h", "/tmp"])
        disk = out.rstrip("\n").split("\n")[-1] if out.strip() else ""
        text += err + f"disk: {disk}\n"
        out, err = capture(["free", "-g"])
        mem = [line.split() + [""] * 7 for line in out.split("\n") if "Mem" in line]  # awk '/Mem/ {print $2, $7}'
        mem = [f"{f[1]} GiB total, {f[6]} GiB available" for f in mem]
        text += err + "memory: " + "\n".join(mem) + "\n"
        out, err = capture(["ldd", f"{BUNDLE_DIR}/libexec/crosspoint"],
                           {"LD_LIBRARY_PATH": env("CROSSPOINT_GPU_LD_PATH")})
        text += err + "".join(line + "\n" for line in out.split("\n") if re.search("not found|cublas|cudart", line))
        return text

    def checkpoints(self):
        """Start writing the random 7B checkpoints (fp16 and each precision) in the background."""
        layers = self.o.layers if (as_int(self.o.layers) or 0) > 0 else "28"
        self.log(f"== 7B checkpoints ({self.o.precisions}; {layers} layers; in the background)")
        self.gen_thread = threading.Thread(target=self.write_checkpoints, name="checkpoints", daemon=True)
        self.gen_thread.start()

    def write_checkpoints(self):
        """The checkpoint writer (a thread): each checkpoint under its own time limit, lines into run.log."""
        try:
            layers = ["--num-layers", self.o.layers] if (as_int(self.o.layers) or 0) > 0 else []
            fp16_args = ["--format", "fp16"]
            if "fp16" not in self.prec_list:
                fp16_args.append("--config-only")  # shape + tokenizer for --model
            generator = f"{ROOT}/benchmarks/gpu/make_random_checkpoint.py"
            if self.from_fp16:
                fp16_args = ["--format", "fp16"]  # the sweep quantises it itself
            for p in ["fp16"] + ([] if self.from_fp16 else self.prec_list):
                if p == "fp16" and os.path.isfile(f"{self.ckpt}/fp16/config.json"):
                    continue
                args = fp16_args if p == "fp16" else ["--format", p]
                log = f"{WORK}/logs/checkpoint-{p}.log"
                t = now()
                rc = self.run(["python3", generator, "--out", f"{self.ckpt}/{p}", *args, *layers, *self.gen_config,
                               "--tokenizer-dir", self.tokenizer], log, self.limit(200))
                if rc != 0 and not self.o.dry_run:  # the torch path failed: numpy on the CPU is slower but sure
                    self.write(f"checkpoint {p}: torch generator rc={rc} ({last_line(log)}); again with numpy\n",
                               echo=False)
                    os.replace(log, f"{WORK}/logs/checkpoint-{p}-torch-failed.log")
                    rc = self.run(["python3", generator, "--out", f"{self.ckpt}/{p}", *args, *layers,
                                   *self.gen_config, "--backend", "numpy", "--tokenizer-dir", self.tokenizer],
                                  log, self.limit(300))
                last_two = tail(log, 2)
                self.write(f"checkpoint {p} rc={rc} {now() - t} s: {last_two[0] if last_two else ''}\n",
                           echo=False)
        except Exception:
            self.write(traceback.format_exc(), echo=False)

    def wait_checkpoints(self):
        """Wait for the checkpoint writer (the ceilings want a quiet GPU); a step for what is present."""
        t = now()
        self.gen_thread.join()  # each checkpoint has its own timeout inside
        # Present = written now or kept from an earlier call on this machine.
        wanted = set(["fp16"] + ([] if self.from_fp16 else self.prec_list))
        written = sum(1 for p in wanted if p and os.path.isfile(f"{self.ckpt}/{p}/config.json"))
        self.step("checkpoints", 0 if written >= len(wanted) else 1, now() - t,
                  f"{written} of {len(wanted)} present; waited {now() - t} s after the tests")

    def tests(self):
        """The CUDA test binaries (TEST_BINARIES; test_analysis's GPU measurement tests only)."""
        # test_analysis runs only its GPU measurement tests: the rest ran in CI.
        names = env("TEST_BINARIES", "test_kernels_cuda test_model_cuda test_determinism test_analysis")
        for t_bin in re.split(r"[,\s]+", names.strip()):  # spaces or commas
            if not is_exec(f"{BUNDLE_DIR}/bin/{t_bin}"):
                self.log(f"{t_bin}: not in the bundle")
                continue
            flt = []
            if t_bin == "test_analysis":
                flt = ["--gtest_filter=GpuMeasurement*"]
            if t_bin == "test_kernels_cuda" and env("TEST_KERNELS_FILTER"):
                flt = [f"--gtest_filter={env('TEST_KERNELS_FILTER')}"]
            if t_bin == "test_model_cuda" and env("TEST_MODEL_FILTER"):
                flt = [f"--gtest_filter={env('TEST_MODEL_FILTER')}"]
            self.log(f"== {t_bin} {' '.join(flt)}")
            t = now()
            log = f"{WORK}/logs/{t_bin}.log"
            rc = self.run([f"{BUNDLE_DIR}/bin/{t_bin}", *flt], log, self.limit(env("TEST_LIMIT_S", "240")))
            self.show(grep(log, r"^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \] [0-9]+ test|Failure$")[:20])
            self.step(t_bin, rc, now() - t, f"{grep_count(log, OK_LINE)} ok")

    def sanitizer(self, tool, seconds, flt, binary="test_kernels_cuda"):
        """compute-sanitizer TOOL over the tests in FLT of BINARY (test_kernels_cuda by default)."""
        name = tool if binary == "test_kernels_cuda" else f"{tool}-{binary}"
        self.log(f"== compute-sanitizer {tool}: {binary} {flt}")
        t = now()
        log = f"{WORK}/logs/sanitizer-{name}.log"
        rc = self.run(["compute-sanitizer", "--tool", tool, "--error-exitcode", "9", "--print-limit", "20",
                       f"{BUNDLE_DIR}/libexec/{binary}", f"--gtest_filter={flt}"], log, self.limit(seconds),
                      extra_env={"LD_LIBRARY_PATH": env("CROSSPOINT_GPU_LD_PATH")})
        self.show(tail(log, 4))
        summary = grep(log, "RACECHECK SUMMARY|ERROR SUMMARY")
        self.step(f"sanitizer_{name}", rc, now() - t,
                  f"{summary[-1] if summary else ''} {grep_count(log, OK_LINE)} ok")

    def selection(self, path, tool):
        """The gtest filter a tests folder keeps for TOOL (the first 'TOOL: FILTER' line of PATH)."""
        for line in read_lines(f"{ROOT}/{path}") or []:
            if line.startswith(f"{tool}: "):
                return line[len(tool) + 2:]
        return ""

    def sanitize(self):
        """compute-sanitizer memcheck and racecheck over test_kernels_cuda, memcheck over test_determinism."""
        kernels = "tests/kernels_cuda/sanitizer_selection.txt"
        self.sanitizer("memcheck", env("SANITIZE_MEMCHECK_S", "110"),
                       env("SANITIZE_MEMCHECK_FILTER") or self.selection(kernels, "memcheck"))
        self.sanitizer("racecheck", env("SANITIZE_RACECHECK_S", "60"),
                       env("SANITIZE_RACECHECK_FILTER") or self.selection(kernels, "racecheck"))
        if is_exec(f"{BUNDLE_DIR}/libexec/test_determinism"):
            self.sanitizer("memcheck", env("SANITIZE_DETERMINISM_S", "90"),
                           env("SANITIZE_DETERMINISM_FILTER")
                           or self.selection("tests/determinism/sanitizer_selection.txt", "memcheck"),
                           "test_determinism")

    def profile(self):
        """ncu over bench_gemm --profile-shapes into $OUT/ncu_profile.txt (clocks left alone)."""
        # Each decode-step linear once per precision at each M of PROFILE_ROWS (1,8), engine dispatch:
        # throughput, memory, occupancy, scheduler and warp-stall sections of the kernels matching
        # PROFILE_KERNELS.
        ncu = ncu_path()
        if not ncu:
            self.step("ncu_profile", 1, 0, "ncu not found")
            return
        kernels = env("PROFILE_KERNELS", "gemv|w4a16")
        self.log(f"== ncu over bench_gemm --profile-shapes ({kernels})")
        t = now()
        log = f"{WORK}/logs/ncu_profile.txt"
        rc = self.run([ncu, "--clock-control", "none", "--kernel-name", f"regex:{kernels}",
                       "--launch-count", env("PROFILE_COUNT", "24"), *NCU_SECTIONS,
                       f"{BUNDLE_DIR}/libexec/bench_gemm", "--profile-shapes", env("PROFILE_ROWS", "1,8")],
                      log, self.limit(env("PROFILE_S", "150")),
                      extra_env={"LD_LIBRARY_PATH": env("CROSSPOINT_GPU_LD_PATH")})
        copy_file(log, f"{self.out}/ncu_profile.txt")
        self.step("ncu_profile", rc, now() - t,
                  f"{grep_count(log, 'profiled ')} shapes, {grep_count(log, '==PROF== Profiling')} kernels")

    def attnprofile(self):
        """ncu over bench_attention --shape (ATTN_SHAPES) into $OUT/ncu_attention.txt."""
        ncu = ncu_path()
        if not ncu:
            self.step("ncu_attention", 1, 0, "ncu not found")
            return
        shape_args = []
        shapes = env("ATTN_SHAPES", "64:512,128:2048")
        for shape in ([] if shapes == "all" else shapes.replace(",", " ").split()):
            shape_args += ["--shape", shape]
        if not shape_args and shapes != "all":
            shape_args = ["--shape", "64:512", "--shape", "128:2048"]
        kernels = env("ATTN_PROFILE_KERNELS", "decode_(tensor_core|balanced)")
        self.log(f"== ncu over bench_attention {' '.join(shape_args)}")
        t = now()
        log = f"{WORK}/logs/ncu_attention.txt"
        rc = self.run([ncu, "--clock-control", "none", "--kernel-name", f"regex:{kernels}",
                       "--launch-count", env("PROFILE_COUNT", "8"), *NCU_SECTIONS,
                       f"{BUNDLE_DIR}/libexec/bench_attention", "--reps", "2", *shape_args,
                       "--out", f"{WORK}/ncu_attention_bench.json"],
                      log, self.limit(env("PROFILE_S", "150")),
                      extra_env={"LD_LIBRARY_PATH": env("CROSSPOINT_GPU_LD_PATH")})
        copy_file(log, f"{self.out}/ncu_attention.txt")
        self.step("ncu_attention", rc, now() - t, f"{grep_count(log, '==PROF== Profiling')} kernels")

    def soak_server_log(self):
        """The soak's server log (its last 3,000 lines: warnings, timeouts, shutdown) into the logs."""
        logs = glob.glob("/tmp/crosspoint-soak-*/server.log")
        if not logs:
            return
        newest = max(logs, key=lambda p: os.stat(p).st_mtime)
        with open(newest, "rb") as f:
            last = collections.deque(f, maxlen=3000)
        with open(f"{WORK}/logs/soak-server.log", "wb") as f:
            f.writelines(last)

    def soak(self):
        """scripts/soak.py on the 7B fp16 checkpoint; SOAK_DETACH=1: detached, collected by soakwait."""
        # 1,000 streams per round (SOAK_STREAMS) for SOAK_MINUTES (4) per round, two rounds, with a KV
        # cache of SOAK_KV_BLOCKS (256) blocks and --max-num-seqs 256; controls compared between rounds
        # only (the default kernels are not batch-invariant). SOAK_DETACH=1 starts it in its own session
        # (it outlives this call, in SOAK_DIR) and returns; a following call with --only soakwait waits
        # for it and brings back its result: a soak longer than one call's 10 minutes runs over two.
        self.log(f"== soak: {env('SOAK_STREAMS', '1000')} streams, 2 rounds of {env('SOAK_MINUTES', '4')} min")
        shutil.rmtree(SOAK_DIR, ignore_errors=True)
        os.makedirs(SOAK_DIR, exist_ok=True)
        soak_cmd = ["python3", f"{ROOT}/scripts/soak.py", "--crosspoint", f"{BUNDLE_DIR}/bin/crosspoint",
                    "--device", self.sweep_device, "--model", f"{self.ckpt}/fp16",
                    "--result", f"{SOAK_DIR}/soak.json", "--minutes", env("SOAK_MINUTES", "4"),
                    "--streams", env("SOAK_STREAMS", "1000"), "--quiet-controls-only",
                    "--serve-arg=--num-gpu-blocks-override", f"--serve-arg={env('SOAK_KV_BLOCKS', '256')}",
                    "--serve-arg=--max-num-seqs", "--serve-arg=256", "--note", "H200 device call"]
        if env("SOAK_DETACH", "0") == "1":
            # setsid nohup ... </dev/null &: its own session, SIGHUP ignored (inherited through exec).
            old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
            try:
                with open(f"{SOAK_DIR}/soak.log", "wb") as log:
                    proc = subprocess.Popen(soak_cmd, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
            finally:
                signal.signal(signal.SIGHUP, old)
            self.step("soak", 0, 0, f"detached: pid {proc.pid}, results in {SOAK_DIR} (collect with --only soakwait)")
            if self.want("tests"):
                self.tests()
            time.sleep(self.limit(540))
        else:
            t = now()
            rc = self.run(soak_cmd, f"{SOAK_DIR}/soak.log", self.limit(560))
            self.step("soak", rc, now() - t, last_line(f"{SOAK_DIR}/soak.log"))
        copy_file(f"{SOAK_DIR}/soak.log", f"{WORK}/logs/")
        self.soak_server_log()
        if os.path.isfile(f"{SOAK_DIR}/soak.json"):
            copy_file(f"{SOAK_DIR}/soak.json", f"{self.out}/soak.json")

    def soakwait(self):
        """Wait for a detached soak (while 70 s are left) and bring back its soak.json."""
        t = now()
        while (not os.path.isfile(f"{SOAK_DIR}/soak.json") and soak_running() and self.left_s() > 70):
            time.sleep(5)
        if os.path.isfile(f"{SOAK_DIR}/soak.json"):
            copy_file(f"{SOAK_DIR}/soak.json", f"{self.out}/soak.json")
        copy_file(f"{SOAK_DIR}/soak.log", f"{WORK}/logs/")
        self.soak_server_log()
        self.show(tail(f"{SOAK_DIR}/soak.log", 30))
        self.step("soakwait", 0 if os.path.isfile(f"{self.out}/soak.json") else 1, now() - t,
                  last_line(f"{SOAK_DIR}/soak.log"))

    def ceilings_part(self):
        """The ceilings: the --ceilings file reused, or shared/tools/gpu/ceilings.py measured."""
        given = self.o.ceilings_given
        if given and os.path.isfile(given):
            copy_file(given, f"{WORK}/ceilings.json")
            self.ceilings = f"{WORK}/ceilings.json"
            self.step("ceilings", 0, 0, f"reused {given}")
        elif os.path.isfile(f"{BUNDLE_DIR}/tools/ceilings.py"):
            self.log("== ceilings (shared/tools/gpu/ceilings.py)")
            t = now()
            log = f"{WORK}/logs/ceilings.log"
            rc = self.run(["python3", f"{BUNDLE_DIR}/tools/ceilings.py", f"{WORK}/ceilings.json"], log,
                          self.limit(100))
            if rc == 0:
                self.ceilings = f"{WORK}/ceilings.json"
            lines = grep(log, "read bytes|matmul_float16")[-2:]
            self.step("ceilings", rc, now() - t, "".join(line.replace('"', "")[:160] + ";" for line in lines))

    def hwinfo_part(self):
        """crosspoint hwinfo --device cuda --json: the engine's own ceilings (rc 3 if not measured)."""
        self.log("== crosspoint hwinfo --device cuda")
        t = now()
        log = f"{WORK}/logs/hwinfo.log"
        rc = self.run([f"{BUNDLE_DIR}/bin/crosspoint", "hwinfo", "--device", "cuda", "--json"],
                      f"{WORK}/hwinfo.json", self.limit(120), err_log=log)
        try:
            with open(f"{WORK}/hwinfo.json") as f:
                d = json.load(f)
            assert d.get("measured")
            check = json.dumps(d["ceilings"])[:300] + "\n"
            self.hwinfo = f"{WORK}/hwinfo.json"
        except Exception:
            check = traceback.format_exc()
            rc = 3 if rc == 0 else rc
        with open(log, "a", encoding="utf-8") as f:
            f.write(check)
        self.show(tail(log, 2))
        self.step("hwinfo", rc, now() - t, last_line(log, 200))

    def check(self):
        """crosspoint generate --device cuda vs transformers on a random 2-layer Qwen2 (7B widths)."""
        self.log("== check: crosspoint generate --device cuda vs transformers (random 2-layer Qwen2, 7B widths)")
        t = now()
        log = f"{WORK}/logs/check.log"
        rc = self.run(["python3", f"{ROOT}/benchmarks/gpu/check_generate_vs_transformers.py",
                       "--crosspoint", f"{BUNDLE_DIR}/bin/crosspoint", "--tokenizer-dir", self.tokenizer,
                       "--out", f"{WORK}/check.json", "--num-layers", "2", "--max-tokens", "32"],
                      log, self.limit(150))
        self.show(grep(log, r"^\s*$", invert=True)[-8:])
        self.step("check", rc, now() - t, last_line(log, 150))
        shutil.rmtree("/tmp/crosspoint-check-qwen2", ignore_errors=True)

    def present_models(self, precisions):
        """--model CKPT/P for each precision whose checkpoint is there, each once."""
        models = []
        for p in precisions:
            path = f"{self.ckpt}/{p}"
            if os.path.isfile(f"{path}/config.json") and f" {path} " not in f" {' '.join(models)} ":
                models += ["--model", path]
        return models

    def bench_decode_step(self, binary, models, commit, name, log_name, extra, tail_n):
        """One bench_decode_step run (decode batches, context 512, prefill 2,048) into WORK/NAME.json."""
        t = now()
        log = f"{WORK}/logs/{log_name}.log"
        rc = self.run([binary, *models, "--batches", self.o.decode_batches, "--context", "512",
                       "--prefill-tokens", "2048", "--ceilings", self.hwinfo or self.ceilings, *extra,
                       "--out", f"{WORK}/{name}.json"], log, self.limit(240),
                      extra_env={"CROSSPOINT_COMMIT": commit})
        self.show(tail(log, tail_n))
        return rc, now() - t, last_line(log, 150)

    def baseline_decode(self, name, models):
        """The --baseline bundle's bench_decode_step into WORK/NAME.json."""
        if not is_exec(f"{BASELINE_DIR}/bin/bench_decode_step"):
            shutil.rmtree(BASELINE_DIR, ignore_errors=True)
            shutil.rmtree(BASELINE_UNPACK, ignore_errors=True)
            os.makedirs(BASELINE_UNPACK, exist_ok=True)
            with open(self.log_path, "ab") as log:
                ok = subprocess.run(["tar", "-C", BASELINE_UNPACK, "-xJf", f"{ROOT}/{self.o.baseline}"],
                                    stderr=log).returncode == 0
            try:
                if not ok:
                    raise OSError
                os.rename(f"{BASELINE_UNPACK}/crosspoint-gpu", BASELINE_DIR)
            except OSError:
                self.step(name, 1, 0, f"cannot unpack {self.o.baseline}")
                return
        commit = manifest_commit(BASELINE_DIR)
        self.log(f"== baseline bench_decode_step ({commit}) -> {name}.json")
        rc, seconds, note = self.bench_decode_step(f"{BASELINE_DIR}/bin/bench_decode_step", models, commit,
                                                   name, name, [], 30)
        self.step(name, rc, seconds, note)

    def decode(self):
        """bench_decode_step over the 7B checkpoints; --baseline before and after, DECODE_VARIANT_ARGS, --deterministic-too."""
        models = self.present_models(["fp16"] + self.prec_list)
        binary = f"{BUNDLE_DIR}/bin/bench_decode_step"
        # Old, new, old again: the new binary is timed between two runs of the old one.
        if self.o.baseline:
            self.baseline_decode("decode_step_baseline", models)
        self.log(f"== bench_decode_step {' '.join(models)} (batches {self.o.decode_batches}, context 512; "
                 f"ceilings {self.hwinfo or self.ceilings})")
        rc, seconds, note = self.bench_decode_step(binary, models, manifest_commit(BUNDLE_DIR), "decode_step",
                                                   "bench_decode_step", [], 60)
        self.step("bench_decode_step", rc, seconds, note)
        if self.o.baseline:
            self.baseline_decode("decode_step_baseline_after", models)
        variant = env("DECODE_VARIANT_ARGS")
        if variant:
            self.log(f"== bench_decode_step {variant} (the same binary, a variant beside the default)")
            rc, seconds, note = self.bench_decode_step(binary, models, manifest_commit(BUNDLE_DIR),
                                                       "decode_step_variant", "bench_decode_step_variant",
                                                       variant.split(), 40)  # the variant's flags, split on purpose
            self.step("bench_decode_step_variant", rc, seconds, note)
        if self.o.det_too:
            self.log("== bench_decode_step --deterministic")
            rc, seconds, note = self.bench_decode_step(binary, models, manifest_commit(BUNDLE_DIR),
                                                       "decode_step_deterministic",
                                                       "bench_decode_step_deterministic", ["--deterministic"], 40)
            self.step("bench_decode_step_deterministic", rc, seconds, note)

    def tensor_parallel(self):
        """bench_tensor_parallel per 7B checkpoint over TP_SIZE (every GPU) ranks into WORK/tensor_parallel.json."""
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL).stdout.decode().split()
        size = env("TP_SIZE", str(max(1, len(gpus))))
        merged = {}
        for p in ["fp16"] + self.prec_list:
            path = f"{self.ckpt}/{p}"
            if p in merged or not os.path.isfile(f"{path}/config.json"):
                continue
            self.log(f"== bench_tensor_parallel {p}: whole on GPU 0 and over {size} GPUs (batches "
                     f"{env('TP_BATCHES', '1,16,64')}, context 512)")
            t = now()
            log = f"{WORK}/logs/bench_tensor_parallel_{p}.log"
            out = f"{WORK}/tensor_parallel_{p}.json"
            rc = self.run([f"{BUNDLE_DIR}/bin/bench_tensor_parallel", "--model", path, "--tensor-parallel-size", size,
                           "--batches", env("TP_BATCHES", "1,16,64"), "--context", "512", "--out", out], log,
                          self.limit(240))
            self.show(tail(log, 12))
            self.step(f"bench_tensor_parallel_{p}", rc, now() - t, last_line(log, 150))
            if rc == 0 and os.path.isfile(out):
                with open(out) as f:
                    merged[p] = json.load(f)
        with open(f"{WORK}/tensor_parallel.json", "w") as f:
            json.dump(merged, f, indent=1)

    def kernels(self):
        """ncu over one eager decode step per precision, grouped by scripts/gpu/kernel_breakdown.py."""
        # Each kernel at KERNELS_BATCHES (1), alone (serialised, caches flushed), with the DRAM bytes it
        # read (kernels.json, a table per step in the log).
        ncu = ncu_path()
        kmodels, klabels = [], []
        for p in ["fp16"] + self.prec_list:
            path = f"{self.ckpt}/{p}"
            if not os.path.isfile(f"{path}/config.json") or f" {path} " in f" {' '.join(kmodels)} ":
                continue
            kmodels += ["--model", path]
            klabels += [f"{p} batch {b}" for b in self.o.kernels_batches.replace(",", " ").split()]
        if not ncu:
            self.step("kernels", 1, 0, "ncu not found")
            return
        self.log(f"== ncu: every kernel of one decode step ({' '.join(kmodels)}, batches {self.o.kernels_batches})")
        t = now()
        csv = f"{WORK}/logs/kernels_ncu.csv"
        rc = self.run([ncu, "--profile-from-start", "off", "--clock-control", "none", "--csv", "--page", "raw",
                       "--metrics", "gpu__time_duration.sum,dram__bytes_read.sum",
                       f"{BUNDLE_DIR}/libexec/bench_decode_step", *kmodels, "--batches", self.o.kernels_batches,
                       "--context", "512", "--prefill-tokens", "64", "--replays", "3", "--eager-reps", "1",
                       "--prefill-reps", "1", "--ceilings", self.hwinfo or self.ceilings, "--profile-step",
                       "--out", f"{WORK}/kernels_bench.json"],
                      csv, self.limit(env("KERNELS_S", "200")), err_log=f"{WORK}/logs/kernels_ncu.log",
                      extra_env={"LD_LIBRARY_PATH": env("CROSSPOINT_GPU_LD_PATH")})
        log = f"{WORK}/logs/kernels.log"
        if self.run(["python3", f"{ROOT}/scripts/gpu/kernel_breakdown.py", csv, "--labels", ",".join(klabels),
                     "--out", f"{WORK}/kernels.json"], log) != 0:
            rc = 3 if rc == 0 else rc
        self.show(read_lines(log) or [])
        self.step("kernels", rc, now() - t, f"{grep_count(log, '^## ')} steps")

    def gguf_joins(self, gguf):
        """(cd GGUF_PARTS && sed "s|  .*|  GGUF|" sha256 | sha256sum -c --quiet -): messages into run.log."""
        messages, checked, ok = [], 0, True
        lines = read_lines(f"{GGUF_PARTS}/sha256")
        if lines is None:
            messages.append("sed: can't read sha256: No such file or directory")
        for line in lines or []:
            line = re.sub("  .*", lambda m: "  " + gguf, line, count=1)
            m = re.match(r"^([0-9a-fA-F]{64}) [ *](.+)$", line)
            if not m:
                continue
            checked += 1
            path = os.path.join(GGUF_PARTS, m.group(2))
            try:
                digest = hashlib.sha256()
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        digest.update(block)
            except OSError:
                messages += [f"sha256sum: {m.group(2)}: No such file or directory", f"{m.group(2)}: FAILED open or read"]
                ok = False
                continue
            if digest.hexdigest() != m.group(1).lower():
                messages += [f"{m.group(2)}: FAILED", "sha256sum: WARNING: 1 computed checksum did NOT match"]
                ok = False
        if checked == 0:
            messages.append("sha256sum: 'standard input': no properly formatted checksum lines found")
            ok = False
        self.write("".join(line + "\n" for line in messages), echo=False)
        return ok

    def gpuvscpu(self):
        """benchmarks/gpu/check_gpu_vs_cpu.py on the default model's real weights (the stashed GGUF parts)."""
        self.log("== GPU against CPU on the default model's real weights")
        t = now()
        gguf = GGUF_FILE
        os.makedirs(os.path.dirname(gguf), exist_ok=True)
        os.makedirs(GGUF_PARTS, exist_ok=True)
        if os.path.isdir(f"{ROOT}/.gguf_parts"):
            self.copy_gguf_parts(errors_to_log=False)
        parts = sorted(glob.glob(f"{GGUF_PARTS}/part-*"))
        with open(gguf, "wb") as joined:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, joined)
        if not parts:
            self.write(f"cat: '{GGUF_PARTS}/part-*': No such file or directory\n", echo=False)
        if not self.gguf_joins(gguf):
            self.step("gpu_vs_cpu", 1, now() - t,
                      f"the GGUF parts in {GGUF_PARTS} are missing or do not join to the file split here")
            return
        log = f"{WORK}/logs/gpu_vs_cpu.log"
        rc = self.run(["python3", f"{ROOT}/benchmarks/gpu/check_gpu_vs_cpu.py", "--crosspoint",
                       f"{BUNDLE_DIR}/bin/crosspoint", "--gguf", gguf, "--work", f"{WORK}/gpuvscpu",
                       "--out", f"{self.out}/gpu_vs_cpu.json",
                       "--calib-dataset", f"{BUNDLE_DIR}/datasets/sharegpt_sample.json",
                       "--commit", manifest_commit(BUNDLE_DIR)], log, self.limit(420))
        lines = read_lines(log) or []
        self.write("".join(line + "\n" for line in lines), echo=False)        # all of it into run.log,
        sys.stdout.write("".join(line + "\n" for line in lines[-12:]))        # the last 12 lines shown
        sys.stdout.flush()
        if os.path.isdir(f"{WORK}/gpuvscpu/logs"):
            dest = f"{WORK}/logs/gpuvscpu"
            if os.path.isdir(dest):
                dest = f"{dest}/logs"
            shutil.copytree(f"{WORK}/gpuvscpu/logs", dest, symlinks=True, dirs_exist_ok=True)
        results = [line for line in lines if not line.startswith("[")]
        passed = sum(1 for line in results if line.endswith(" PASS"))
        failed = sum(1 for line in results if line.endswith(" FAIL"))
        self.step("gpu_vs_cpu", rc, now() - t, f"{passed} cells passed, {failed} failed")

    def servercheck(self):
        """benchmarks/gpu/check_server_determinism.py over the checkpoints of --precisions."""
        models = []
        for p in self.prec_list:
            if os.path.isfile(f"{self.ckpt}/{p}/config.json"):
                models += ["--model", f"{self.ckpt}/{p}"]
        self.log(f"== server determinism: {' '.join(models)}")
        t = now()
        log = f"{WORK}/logs/server_determinism.log"
        rc = self.run(["python3", f"{ROOT}/benchmarks/gpu/check_server_determinism.py", "--crosspoint",
                       f"{BUNDLE_DIR}/bin/crosspoint", *models, "--out", f"{WORK}/server_determinism.json",
                       "--log", f"{WORK}/logs/server_determinism_servers.log"], log, self.limit(300))
        self.show(read_lines(log) or [])
        self.step("server_determinism", rc, now() - t, last_line(log, 150))

    def read_ceilings(self, path):
        """read -r BW F16 F8 < <(scripts/gpu/read_ceilings.py PATH): three strings, "" where missing."""
        try:
            out = subprocess.run(["python3", f"{ROOT}/scripts/gpu/read_ceilings.py", path],
                                 stdout=subprocess.PIPE).stdout.decode("utf-8", errors="replace")
        except OSError:
            out = ""
        fields = out.split("\n", 1)[0].split(None, 2)
        fields = [f.strip() for f in fields] + [""] * (3 - len(fields))
        return fields[0], fields[1], fields[2]

    def gemm(self, ceilings):
        """bench_gemm (the linears alone) and bench_attention (paged attention, decoder ops alone)."""
        self.log(f"== bench_gemm (linears alone; ceilings of {ceilings})")
        t = now()
        # Read bandwidth, fp16 and fp8 GEMM rates: crosspoint hwinfo --json's "ceilings", or ceilings.py's
        # best median streaming read, fp16 GEMM and best fp8 GEMM (no defaults).
        bw, f16, f8 = self.read_ceilings(ceilings)
        if not f8:
            self.step("bench_gemm", 1, 0, f"could not read the ceilings from {ceilings}")
            bw = ""
        log = f"{WORK}/logs/bench_gemm.log"
        rc = 1  # the bash version's `[ -n "$BW" ] && timeout ...`: 1 when there is no bandwidth
        if not is_exec(f"{BUNDLE_DIR}/bin/bench_gemm"):
            self.log("bench_gemm is not in this bundle: bench_attention alone")
        else:
            if bw:
                # BENCH_GEMM_ARGS / BENCH_ATTENTION_ARGS: extra arguments (e.g. --gemv16-only, --small-batch).
                rc = self.run([f"{BUNDLE_DIR}/bin/bench_gemm", "--bw-gbps", bw, "--fp16-tflops", f16,
                               "--fp8-tflops", f8, *env("BENCH_GEMM_ARGS").split(), "--out",
                               f"{WORK}/bench_gemm.json"], log, self.limit(env("BENCH_GEMM_S", "150")))
            self.show(grep(log, r"^\|")[-40:])
            self.step("bench_gemm", rc, now() - t, f"bw {bw} GB/s")
        if bw and is_exec(f"{BUNDLE_DIR}/bin/bench_attention") and env("ATTENTION_MICRO", "1") == "1":
            self.log("== bench_attention (paged attention and decoder ops alone)")
            t = now()
            log = f"{WORK}/logs/bench_attention.log"
            rc = self.run([f"{BUNDLE_DIR}/bin/bench_attention", "--bw-gbps", bw, "--reps", "20",
                           *env("BENCH_ATTENTION_ARGS").split(), "--out", f"{WORK}/bench_attention.json"],
                          log, self.limit(120))
            self.show(grep(log, "decode|prefill|FAILED")[-30:])
            self.step("bench_attention", rc, now() - t, "")

    def kvattn(self, ceilings):
        """bench_attention --fp8: the e4m3 KV cache's attention beside fp16's, against the read ceiling."""
        bw = self.read_ceilings(ceilings)[0]
        self.log(f"== bench_attention --fp8 (e4m3 KV cache beside fp16; read ceiling {bw} GB/s)")
        t = now()
        log = f"{WORK}/logs/bench_attention_fp8.log"
        rc = self.run([f"{BUNDLE_DIR}/bin/bench_attention", "--fp8", "--bw-gbps", bw, "--reps", "20",
                       "--out", f"{WORK}/bench_attention_fp8.json"], log, self.limit(150))
        self.show(grep(log, r"^(decode|prefill) |FAILED|ratio")[-24:])
        self.step("bench_attention_fp8", rc, now() - t, f"bw {bw} GB/s")

    def peers(self):
        """torch_peer.py --part compile per --peer-modes at batch 1, each while PEER_MIN_LEFT_S are left."""
        log = f"{WORK}/logs/peers.log"
        for mode in comma_list(self.o.peer_modes):
            min_left = as_int(env("PEER_MIN_LEFT_S", "150"))
            if min_left is not None and self.left_s() < min_left:
                self.log(f"peers: {self.left_s()} s left, {mode} skipped")
                self.step(f"peer_{mode}", -1, 0, "skipped: no time")
                continue
            self.log(f"== torch peer: compiled gpt-fast-style decode, {mode}, batch 1")
            t = now()
            rc = self.run(["python3", f"{BUNDLE_DIR}/tools/torch_peer.py", "--part", "compile",
                           "--mode", *mode.split(), "--bss", "1", "--out", f"{WORK}/peer_{mode}.json"],
                          log, self.limit(170), append=True)
            self.step(f"peer_{mode}", rc, now() - t, last_line(log, 150))

    def sweep(self):
        """crosspoint sweep over the precisions (--resume-sweep continues one; --deterministic-too twice)."""
        o = self.o
        self.log(f"== crosspoint sweep --device {self.sweep_device} ({o.precisions} x {o.concurrency}, "
                 f"{o.num_prompts} prompts, {o.dataset})")
        sweep_dir = f"{WORK}/sweep"
        args = ["--device", self.sweep_device, "--model", f"{self.ckpt}/fp16", "--precisions", o.precisions,
                "--concurrency", o.concurrency, "--num-prompts", o.num_prompts,
                "--eval-samples", env("SWEEP_EVAL_SAMPLES", "0"),
                "--max-model-len", "4096", "--max-bisect-runs", o.bisect, "--gpu-memory-utilization", o.gpu_mem,
                "--ignore-eos", "--out", sweep_dir, "--server-start-timeout", "240",
                "--kv-cache-dtypes", o.kv_dtypes, "--prefix-caching", o.prefix_caching,
                "--tensor-parallel-sizes", o.tp_sizes]
        for p in self.prec_list:
            if p != "fp16" and not self.from_fp16:
                args += ["--precision-model", f"{p}={self.ckpt}/{p}"]
        if self.from_fp16:
            args += ["--quant-calib-samples", env("GPTQ_CALIB_SAMPLES", "128")]
        if o.dataset == "random":
            args += ["--dataset", "random", "--random-input-len", "218", "--output-len", "220"]
        elif o.dataset == "prefix_repetition":  # a shared system prompt or document before each question
            args += ["--dataset", "prefix_repetition", "--prefix-len", env("PREFIX_LEN", "1024"),
                     "--suffix-len", env("SUFFIX_LEN", "128"), "--num-prefixes", env("NUM_PREFIXES", "8"),
                     "--output-len", env("PREFIX_OUTPUT_LEN", "128")]
        else:
            args += ["--dataset", "sharegpt", "--dataset-path", f"{BUNDLE_DIR}/datasets/sharegpt_sample.json",
                     "--output-len", "0"]
        # The sweep measures the GPU itself (crosspoint hwinfo, kept in its folder) unless ceilings are given.
        if o.ceilings_given:
            args += ["--ceilings", self.ceilings]
        if o.resume_sweep:
            if os.path.isfile(f"{o.resume_sweep}/sweep.json"):
                shutil.copytree(o.resume_sweep, sweep_dir, symlinks=True, dirs_exist_ok=True)
                self.log(f"resuming the sweep of {o.resume_sweep}: {cells_in(sweep_dir + '/cells')} cells kept")
            else:
                self.log(f"--resume-sweep {o.resume_sweep} holds no sweep.json: starting afresh")
        if o.eager:
            args.append("--enforce-eager")
        if env("MEMORY_BUDGET"):
            args += ["--memory-budget", env("MEMORY_BUDGET")]
        if env("MAX_NUM_SEQS"):
            args += ["--max-num-seqs", env("MAX_NUM_SEQS")]
        self.write(f"crosspoint sweep {' '.join(args)}\n", echo=False)
        t = now()
        sweep_limit = int((self.left_s() - 40) / 2) if o.det_too else 540
        log = f"{WORK}/logs/sweep.log"
        rc = self.run([f"{BUNDLE_DIR}/bin/crosspoint", "sweep", *args], log, self.limit(sweep_limit))
        self.show(grep(log, r"^\s*$|sweep cells \[", invert=True)[-15:])
        self.step("sweep", rc, now() - t, f"{cells_in(sweep_dir + '/cells')} cells")
        if o.det_too:
            det_dir = f"{WORK}/sweep-deterministic"
            det_args = [det_dir if a == sweep_dir else a for a in args]
            t = now()
            log = f"{WORK}/logs/sweep-deterministic.log"
            rc = self.run([f"{BUNDLE_DIR}/bin/crosspoint", "sweep", *det_args, "--deterministic"], log,
                          self.limit(540))
            self.show(grep(log, r"^\s*$|sweep cells \[", invert=True)[-15:])
            self.step("sweep_deterministic", rc, now() - t, f"{cells_in(det_dir + '/cells')} cells")
        lines = []
        for f in sorted(glob.glob(f"{sweep_dir}/logs/serve-*.log")):
            if os.path.isfile(f):
                lines.append(f"-- {os.path.basename(f)}:")
                lines += grep(f, "GPU|weights|KV cache|capacity|graphs|start-up|error|Error")[:12]
        self.show(lines)

    def quantpeer(self):
        """torch_peer.py --part quant: graph-replayed fp8/int4 decode at batch 1/8/32/64."""
        self.log("== torch peer: graph-replayed fp8/int4 decode at batch 1/8/32/64 (--part quant)")
        t = now()
        log = f"{WORK}/logs/peers.log"
        rc = self.run(["python3", f"{BUNDLE_DIR}/tools/torch_peer.py", "--part", "quant", "--out",
                       f"{WORK}/peer_quant.json"], log, self.limit(240), append=True)
        self.step("peer_quant", rc, now() - t, last_line(log, 150))

    def quantize(self):
        """crosspoint quantize --device cuda and --device cpu of the 7B fp16 checkpoint, timed and compared."""
        fp16 = f"{self.ckpt}/fp16"
        if not os.path.isfile(f"{fp16}/config.json"):
            self.step("quantize", 1, 0, "no fp16 checkpoint")
            return
        results = {"model": fp16, "schemes": {}}
        t = now()
        read = subprocess.run(f"cat {fp16}/*.safetensors | wc -c", shell=True, stdout=subprocess.PIPE)
        seconds = max(now() - t, 1e-3)
        size = as_int(read.stdout.decode().strip()) or 0
        results["read_fp16"] = {"bytes": size, "seconds": seconds, "note": "cat after writing: page cache"}
        for scheme in comma_list(env("QUANT_SCHEMES", "w8a8-fp8,w8a8-int8")):
            entry = {}
            # GPTQ of a 7B on the CPU is out of the question: w4a16 runs on the GPU only, with act-order,
            # group 128 and GPTQ_CALIB_SAMPLES packed samples of GPTQ_CALIB_TOKENS tokens of the bundle's ShareGPT.
            extra, devices = [], ("cuda", "cpu")
            if scheme == "w4a16":
                devices = ("cuda",)
                extra = ["--method", "gptq", "--desc-act", "--group-size", "128", "--calib-pack",
                         "--calib-dataset", f"{BUNDLE_DIR}/datasets/sharegpt_sample.json",
                         "--calib-samples", env("GPTQ_CALIB_SAMPLES", "128"),
                         "--calib-max-tokens", env("GPTQ_CALIB_TOKENS", "2048")]
                entry["args"] = extra
            for device in devices:
                out_dir = f"{WORK}/quant-{scheme}-{device}"
                log = f"{WORK}/logs/quantize-{scheme}-{device}.log"
                self.log(f"== crosspoint quantize --scheme {scheme} --device {device} {' '.join(extra)}")
                t0 = time.monotonic()
                rc = self.run([f"{BUNDLE_DIR}/bin/crosspoint", "quantize", "--model", fp16, "--scheme", scheme,
                               "--device", device, "--out", out_dir, "--force", *extra], log,
                              self.limit(int(env("QUANT_LIMIT_S", "200"))))
                wall = time.monotonic() - t0
                self.show(grep(log, r"GPU|written|wrote|error|Error|GB")[-6:])
                self.step(f"quantize_{scheme}_{device}", rc, round(wall), last_line(log, 150))
                entry[device] = {"rc": rc, "seconds": round(wall, 2), "log_tail": tail(log, 4)}
                if rc != 0:
                    break
            if entry.get("cuda", {}).get("rc") == 0 and entry.get("cpu", {}).get("rc") == 0:
                a, b = f"{WORK}/quant-{scheme}-cuda", f"{WORK}/quant-{scheme}-cpu"
                files = sorted(f for f in os.listdir(a) if f.endswith(".safetensors"))
                same = [f for f in files if os.path.isfile(f"{b}/{f}") and filecmp.cmp(f"{a}/{f}", f"{b}/{f}", False)]
                entry["safetensors_files"] = len(files)
                entry["identical_files"] = len(same)
                self.write(f"quantize {scheme}: {len(same)} of {len(files)} safetensors files identical cuda vs cpu\n")
            for device in ("cuda", "cpu"):
                shutil.rmtree(f"{WORK}/quant-{scheme}-{device}", ignore_errors=True)
            results["schemes"][scheme] = entry
        with open(f"{self.out}/quantize.json", "w") as f:
            json.dump(results, f, indent=1)

    # ------------------------------------------------------------ the call

    def finish(self):
        """results.json (scripts/gpu/study_results.py), the reports and logs.tar.xz into $OUT: on every exit."""
        self.stopping = True  # no new step from here on (the checkpoint writer may still be running)
        self.log("== results.json")
        try:
            r = subprocess.run(["python3", f"{ROOT}/scripts/gpu/study_results.py", self.out, WORK, self.steps, ROOT,
                                BUNDLE_DIR, f"{self.o.only} {self.o.precisions}"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.write(r.stdout.decode("utf-8", errors="replace"))
        except OSError as e:
            self.write(f"gpu_study.py: study_results.py: {e}\n")
        for name in ("report.md", "report.html", "study.json"):
            if os.path.isfile(f"{WORK}/sweep/{name}"):
                copy_file(f"{WORK}/sweep/{name}", f"{self.out}/")
        if os.path.isfile(f"{WORK}/sweep-deterministic/report.md"):
            copy_file(f"{WORK}/sweep-deterministic/report.md", f"{self.out}/report-deterministic.md")
        subprocess.run(["tar", "-C", WORK, "-cJf", f"{self.out}/logs.tar.xz", "--exclude=*.partial", "logs", "sweep",
                        "sweep-deterministic", "check.json", "steps.jsonl"], stderr=subprocess.DEVNULL)
        # results.json holds decode_step, hwinfo, server_determinism and the rest: $OUT brings back 8 files at most.
        self.log(f"done in {now() - self.start} s; $OUT: {ls_line(self.out)}")

    def parts(self):
        """Every part --only names, in the study's order; the exit code back."""
        if self.want("stash"):
            self.stash()
            if self.o.only == "stash":
                return 0
        if not self.unpack():
            return 1
        if (self.want("sweep") or self.want("decode") or self.want("kernels") or self.want("soak")
                or self.want("quantize") or self.want("tp")):
            self.checkpoints()
        # With a detached soak the tests run after it has started (beside it: they check correctness,
        # not speed).
        soak_first = self.want("soak") and env("SOAK_DETACH", "0") == "1"
        if self.want("tests") and not soak_first:
            self.tests()
        if self.want("sanitize") and is_exec(f"{BUNDLE_DIR}/libexec/test_kernels_cuda"):
            self.sanitize()
        if self.want("profile") and is_exec(f"{BUNDLE_DIR}/libexec/bench_gemm"):
            self.profile()
        if self.want("attnprofile") and is_exec(f"{BUNDLE_DIR}/libexec/bench_attention"):
            self.attnprofile()
        if self.gen_thread:  # the ceilings want a quiet GPU: the checkpoints must be written first
            self.wait_checkpoints()
        if self.want("soak"):
            self.soak()
        if self.want("soakwait"):
            self.soakwait()
        # ceilings.py (--only ceilings) beside crosspoint hwinfo; the sweep, bench_decode_step and
        # bench_gemm use hwinfo's measurement unless --ceilings FILE is given.
        if self.o.ceilings_given or self.want("ceilings"):
            self.ceilings_part()
        if self.want("hwinfo") or self.want("decode"):  # the sweep measures the GPU itself (its own hwinfo child)
            self.hwinfo_part()
        if self.want("check"):
            self.check()
        if self.want("decode") and is_exec(f"{BUNDLE_DIR}/bin/bench_decode_step"):
            self.decode()
        if self.want("kernels") and is_exec(f"{BUNDLE_DIR}/bin/bench_decode_step"):
            self.kernels()
        if self.want("tp") and is_exec(f"{BUNDLE_DIR}/bin/bench_tensor_parallel"):
            self.tensor_parallel()
        if self.want("gpuvscpu"):
            self.gpuvscpu()
        if self.want("servercheck"):
            self.servercheck()
        ceil_for_gemm = self.ceilings or self.hwinfo
        if ((self.want("decode") or self.want("gemm")) and env("DECODE_MICRO", "1") == "1"
                and (is_exec(f"{BUNDLE_DIR}/bin/bench_gemm") or is_exec(f"{BUNDLE_DIR}/bin/bench_attention"))
                and ceil_for_gemm):
            self.gemm(ceil_for_gemm)
        if self.want("kvattn") and is_exec(f"{BUNDLE_DIR}/bin/bench_attention") and ceil_for_gemm:
            self.kvattn(ceil_for_gemm)
        if self.want("quantize"):  # after the kernel benchmarks: their GPU quiet, the disk busy here
            self.quantize()
        # The torch peers before the sweep: the side-by-side figures.
        if self.want("peers") and os.path.isfile(f"{BUNDLE_DIR}/tools/torch_peer.py"):
            self.peers()
        if self.want("sweep"):
            self.sweep()
        if self.want("quantpeer") and os.path.isfile(f"{BUNDLE_DIR}/tools/torch_peer.py") and self.left_s() > 120:
            self.quantpeer()
        return 0

    def main(self):
        """The parts, then finish() however they end (SIGTERM, SIGINT and SIGHUP included)."""
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self.on_signal)
        try:
            return self.parts()
        finally:
            self.finish()


def main(argv):
    """The options (--help and bad options leave nothing behind), then $OUT, then the study."""
    start = now()
    opts = Options(argv)
    budget_s = as_int(env("BUDGET_S", "560"))
    if budget_s is None:
        print(f"gpu_study.py: BUDGET_S={env('BUDGET_S')} is not a number of seconds", file=sys.stderr)
        return 2
    out = env("OUT", f"{ROOT}/out-gpu-study")
    os.makedirs(out, exist_ok=True)
    return Study(opts, out, start, budget_s).main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""benchmarks/gpu/make_random_checkpoint.py on its tiny config (numpy backend), checked against
the layouts of shared/docs/reference/checkpoint-formats.md and loaded by crosspoint:

- the three formats come from the same random weights: the GPTQ int4 tensors dequantised with the
  reference formula (q = (qweight[k/8][n] >> 4*(k%8)) & 0xF, z = ((qzeros >> 4*(n%8)) & 0xF) + 1,
  W[k][n] = scales[g_idx[k]][n] * (q - z)) are within half a quantisation step of the fp16 weights,
  the e4m3 weights times weight_scale (per row, or per 128 x 128 block in the block-wise layout)
  within e4m3's relative step, the int8 ones within half a
  step of absmax / 127.5; configs carry the
  quantization_config the loaders expect;
- files are read by the safetensors library itself (fp16 and int4: numpy framework);
- `crosspoint generate --max-tokens 4 --ids` loads each directory and prints 4 token ids.

Run by ctest (sweep_random_checkpoints) with the setup venv's python (numpy, ml_dtypes, safetensors).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GENERATOR = os.path.join(REPO, "benchmarks", "gpu", "make_random_checkpoint.py")
TOKENIZER = os.path.join(REPO, "tests", "fixtures", "bench", "tiny_tokenizer")


def read_raw(path):
    """{name: (dtype, shape, bytes)} by the safetensors byte format (for F8_E4M3 and BF16, which
    numpy cannot hold)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crosspoint", required=True)
    args = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="crosspoint_random_ckpt_") as tmp:
        dirs = {}
        for fmt in ("fp16", "w8a8-fp8", "w8a8-fp8-block", "w8a8-int8", "w4a16"):
            out = os.path.join(tmp, fmt)
            r = subprocess.run([sys.executable, GENERATOR, "--out", out, "--format", fmt, "--config", "tiny",
                                "--backend", "numpy", "--tokenizer-dir", TOKENIZER], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{fmt}: generator failed: {r.stderr[-500:]}")
            dirs[fmt] = out
        dense = load_file(os.path.join(dirs["fp16"], "model.safetensors"))
        gptq = load_file(os.path.join(dirs["w4a16"], "model.safetensors"))
        fp8 = read_raw(os.path.join(dirs["w8a8-fp8"], "model.safetensors"))
        int8 = read_raw(os.path.join(dirs["w8a8-int8"], "model.safetensors"))
        fp8b = read_raw(os.path.join(dirs["w8a8-fp8-block"], "model.safetensors"))
        linears = [k[:-len(".weight")] for k in dense if k.startswith("model.layers.") and k.endswith("proj.weight")]
        assert len(linears) == 14, linears  # 2 layers x q k v o gate up down
        for prefix in linears:
            w = dense[prefix + ".weight"].astype(np.float32)  # [N, K]
            n, k = w.shape
            # GPTQ v1: qweight [K/8, N], qzeros [K/G, N/8], scales [K/G, N], g_idx [K]
            qweight = gptq[prefix + ".qweight"].view(np.uint32)
            qzeros = gptq[prefix + ".qzeros"].view(np.uint32)
            scales = gptq[prefix + ".scales"].astype(np.float32)
            g_idx = gptq[prefix + ".g_idx"]
            assert qweight.shape == (k // 8, n) and scales.shape == (k // 128, n) and qzeros.shape == (k // 128, n // 8)
            kk = np.arange(k)
            q = (qweight[kk // 8, :] >> (4 * (kk % 8))[:, None].astype(np.uint32)) & 0xF       # [K, N]
            nn = np.arange(n)
            z = ((qzeros[:, nn // 8] >> (4 * (nn % 8))[None, :].astype(np.uint32)) & 0xF) + 1  # [K/G, N]
            deq = scales[g_idx, :] * (q.astype(np.float32) - z[g_idx, :].astype(np.float32))    # [K, N]
            err = np.abs(deq - w.T) / scales[g_idx, :]
            if not (z == 8).all():
                failures.append(f"{prefix}: zero points are not 8 (sym)")
            if err.max() > 0.5 + 1e-2:
                failures.append(f"{prefix}: int4 dequant off by {err.max():.3f} steps (layout wrong?)")
            # FP8: weight e4m3 [N, K], weight_scale [N, 1] (bf16)
            dt, shape, raw = fp8[prefix + ".weight"]
            assert dt == "F8_E4M3" and shape == [n, k], (dt, shape)
            e4m3 = np.frombuffer(raw, dtype=ml_dtypes.float8_e4m3fn).reshape(n, k).astype(np.float32)
            dt, shape, raw = fp8[prefix + ".weight_scale"]
            assert dt == "BF16" and shape == [n, 1], (dt, shape)
            scale = np.frombuffer(raw, dtype=ml_dtypes.bfloat16).reshape(n, 1).astype(np.float32)
            rel = np.abs(e4m3 * scale - w) / (np.abs(w).max(axis=1, keepdims=True))
            if rel.max() > 2 ** -4:
                failures.append(f"{prefix}: e4m3 x scale off by {rel.max():.4f} of the row's absmax")
            # Block FP8: weight e4m3 [N, K], weight_scale_inv f32 [ceil(N/128), ceil(K/128)]
            dt, shape, raw = fp8b[prefix + ".weight"]
            assert dt == "F8_E4M3" and shape == [n, k], (dt, shape)
            e4m3 = np.frombuffer(raw, dtype=ml_dtypes.float8_e4m3fn).reshape(n, k).astype(np.float32)
            nb, kb = -(-n // 128), -(-k // 128)
            dt, shape, raw = fp8b[prefix + ".weight_scale_inv"]
            assert dt == "F32" and shape == [nb, kb], (dt, shape)
            block_scale = np.frombuffer(raw, dtype=np.float32).reshape(nb, kb)
            full = np.repeat(np.repeat(block_scale, 128, axis=0), 128, axis=1)[:n, :k]
            rel = np.abs(e4m3 * full - w) / (full * 448)  # of the block's absmax
            if rel.max() > 2 ** -4:
                failures.append(f"{prefix}: block e4m3 x weight_scale_inv off by {rel.max():.4f} of the block's absmax")
            # INT8: weight int8 [N, K], weight_scale [N, 1] (bf16)
            dt, shape, raw = int8[prefix + ".weight"]
            assert dt == "I8" and shape == [n, k], (dt, shape)
            codes = np.frombuffer(raw, dtype=np.int8).reshape(n, k).astype(np.float32)
            dt, shape, raw = int8[prefix + ".weight_scale"]
            assert dt == "BF16" and shape == [n, 1], (dt, shape)
            scale = np.frombuffer(raw, dtype=ml_dtypes.bfloat16).reshape(n, 1).astype(np.float32)
            # The bf16 scale moves the grid by up to 2^-8 relative, over up to 128 steps: half a step plus that.
            steps = np.abs(codes * scale - w) / scale
            if steps.max() > 0.5 + 128 * 2 ** -8 or np.abs(codes).max() < 100:
                failures.append(f"{prefix}: int8 x scale off by {steps.max():.3f} steps, or codes not spread")
        for fmt, method in (("w4a16", "gptq"), ("w8a8-fp8", "compressed-tensors"), ("w8a8-fp8-block", "fp8"),
                            ("w8a8-int8", "compressed-tensors")):
            cfg = json.load(open(os.path.join(dirs[fmt], "config.json")))
            if cfg.get("quantization_config", {}).get("quant_method") != method:
                failures.append(f"{fmt}: quantization_config.quant_method is not {method}")
        fp8_cfg = json.load(open(os.path.join(dirs["w8a8-fp8"], "config.json")))["quantization_config"]
        if fp8_cfg["ignore"] != ["lm_head"] or "lm_head.weight" not in fp8 or fp8["lm_head.weight"][0] != "BF16":
            failures.append("w8a8-fp8: lm_head must stay bf16 and be ignored")
        int8_cfg = json.load(open(os.path.join(dirs["w8a8-int8"], "config.json")))["quantization_config"]
        if int8_cfg["format"] != "int-quantized" or "lm_head.weight" not in int8 or int8["lm_head.weight"][0] != "BF16":
            failures.append("w8a8-int8: format must be int-quantized and lm_head stay bf16")
        for fmt, d in dirs.items():
            r = subprocess.run([args.crosspoint, "generate", "--device", "cpu", "--model", d, "--prompt", "hello world", "--max-tokens",
                                "4", "--ids", "--threads", "1"], capture_output=True, text=True, timeout=120)
            ids = [line for line in r.stdout.splitlines() if line.startswith("[")]
            if r.returncode != 0 or not ids or len(json.loads(ids[-1])) != 4:
                failures.append(f"{fmt}: crosspoint generate failed: rc {r.returncode} {r.stderr[-300:]}")
            else:
                print(f"{fmt}: crosspoint generate -> {ids[-1]}")
    for f in failures:
        print("FAIL", f)
    print("random checkpoints: " + ("OK" if not failures else f"{len(failures)} failures"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

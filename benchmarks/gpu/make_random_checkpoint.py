#!/usr/bin/env python3
"""A Hugging Face checkpoint directory with Qwen2.5-7B-Instruct's real config and RANDOM weights,
in the layout of one of the study's three checkpoints:

  fp16       Qwen/Qwen2.5-7B-Instruct saved in float16 (--dtype bfloat16 for the hub's dtype)
  w8a8-fp8   RedHatAI/Qwen2.5-7B-Instruct-FP8-dynamic: compressed-tensors "float-quantized", every
             decoder linear's weight in e4m3 [N, K] with a per-output-channel weight_scale [N, 1],
             dynamic per-token activations, lm_head ignored; the rest bfloat16
  w8a8-int8  llm-compressor's W8A8 (INT8) preset: compressed-tensors "int-quantized", every decoder
             linear's weight int8 [N, K] with a per-output-channel weight_scale [N, 1], dynamic
             per-token activations, lm_head ignored; the rest bfloat16
  w8a8-fp8-block  the Qwen3 *-FP8 layout (quant_method "fp8", weight_block_size [128, 128]): e4m3
             weights [N, K] with an f32 weight_scale_inv [ceil(N/128), ceil(K/128)] (absmax/448 per
             block), dynamic per-token-group activations; the rest bfloat16
  w4a16      Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4: GPTQ v1, 4 bits, group 128, sym, desc_act false;
             qweight int32 [K/8, N], qzeros int32 [K/128, N/8] (0x77777777), scales fp16
             [K/128, N], g_idx int32 [K]; the rest float16

Hub checkpoints cannot reach the GPU machine, and decode speed does not depend on the values.
Every format is made from the same seeded random FP16 weights (normal(0, 0.02) linears and
embeddings, norms 1, biases normal(0, 0.02)), quantised the way the real tools store them
(fp8: weight_scale = absmax/448 per row; int8: absmax/127.5 per row, rint clamped to [-128, 127],
compressed-tensors' rule; GPTQ: round-to-nearest with scale = 2*absmax/15 per group
of 128 input rows and zero point 8), so the three are one model and activations stay finite.

Runs on the GPU with torch (fast: the 7B in fp16 is ~15 GB, written as shards plus
model.safetensors.index.json) or, without torch, on the CPU with numpy + ml_dtypes (for the
tiny config in tests). Layouts: shared/docs/reference/checkpoint-formats.md.

  python3 make_random_checkpoint.py --out /tmp/qwen7b-fp16 --format fp16 --tokenizer-dir DIR
  python3 make_random_checkpoint.py --out /tmp/tiny-gptq --format w4a16 --config tiny --backend numpy

Prints one last line `RESULT {json}` (format, bytes, seconds, GB/s) for scripts/gpu_study.py.
"""
import argparse
import json
import os
import shutil
import sys
import time
import zlib

# Qwen2.5-7B-Instruct's config.json (values: shared/docs/reference/checkpoint-formats.md).
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "hidden_act": "silu",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 18944,
    "max_position_embeddings": 32768,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 152064,
}

# The same architecture, small enough for a CPU test with tests/fixtures/bench/tiny_tokenizer
# (600 tokens): every width a multiple of 128 so GPTQ's group of 128 applies unchanged.
TINY = dict(QWEN25_7B, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_window_layers=2, vocab_size=640, max_position_embeddings=4096,
            bos_token_id=0, eos_token_id=0)

GPTQ_GROUP = 128
E4M3_MAX = 448.0
WEIGHT_STD = 0.02

# quantization_config of Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4 (written by optimum's GPTQ: the keys
# crosspoint reads are bits, group_size, desc_act, sym, checkpoint_format; the others as the
# optimum writer puts them, not verified against the hub file).
GPTQ_CONFIG = {
    "batch_size": 1, "bits": 4, "block_name_to_quantize": None, "cache_block_outputs": True,
    "damp_percent": 0.01, "dataset": None, "desc_act": False, "exllama_config": {"version": 1},
    "group_size": GPTQ_GROUP, "max_input_length": None, "model_seqlen": None,
    "module_name_preceding_first_block": None, "modules_in_block_to_quantize": None, "pad_token_id": None,
    "quant_method": "gptq", "sym": True, "tokenizer": None, "true_sequential": True, "use_cuda_fp16": False,
    "use_exllama": True, "checkpoint_format": "gptq",
}

# quantization_config of RedHatAI's FP8-dynamic checkpoints (compressed-tensors preset FP8_DYNAMIC).
FP8_ARGS_COMMON = {"group_size": None, "block_structure": None, "actorder": None, "observer_kwargs": {}}
FP8_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "quantization_status": "compressed",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": dict(FP8_ARGS_COMMON, num_bits=8, type="float", strategy="channel", symmetric=True,
                            dynamic=False, observer="minmax"),
            "input_activations": dict(FP8_ARGS_COMMON, num_bits=8, type="float", strategy="token", symmetric=True,
                                      dynamic=True, observer=None),
            "output_activations": None,
        }
    },
    "ignore": ["lm_head"],
    "kv_cache_scheme": None,
    "global_compression_ratio": None,
    "sparsity_config": {},
}

# quantization_config of llm-compressor's W8A8 preset (compressed-tensors "int-quantized").
INT8_CONFIG = dict(FP8_CONFIG, format="int-quantized", config_groups={
    "group_0": {
        "targets": ["Linear"],
        "weights": dict(FP8_ARGS_COMMON, num_bits=8, type="int", strategy="channel", symmetric=True, dynamic=False,
                        observer="minmax"),
        "input_activations": dict(FP8_ARGS_COMMON, num_bits=8, type="int", strategy="token", symmetric=True,
                                  dynamic=True, observer=None),
        "output_activations": None,
    }
})
INT8_DIVISOR = 127.5

# quantization_config of the block-wise FP8 checkpoints (Qwen3 / DeepSeek *-FP8, transformers'
# FineGrainedFP8): e4m3 weights with one f32 scale per 128 x 128 block, "weight_scale_inv" = the
# dequantisation multiplier; activations quantised per token and 128-column group at run time.
FP8_BLOCK = 128
FP8_BLOCK_CONFIG = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                    "weight_block_size": [FP8_BLOCK, FP8_BLOCK]}  # compressed-tensors' symmetric int8 range (q_max - q_min) / 2

BYTES_PER = {"F16": 2, "BF16": 2, "F32": 4, "F8_E4M3": 1, "I8": 1, "I32": 4}


# ----------------------------------------------------------------------------- the tensors

def linears(cfg):
    """(prefix, N out, K in, has_bias) of every decoder linear, in file order."""
    d, inter = cfg["hidden_size"], cfg["intermediate_size"]
    head_dim = cfg.get("head_dim", d // cfg["num_attention_heads"])
    q_out, kv_out = cfg["num_attention_heads"] * head_dim, cfg["num_key_value_heads"] * head_dim
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield i, [(p + "self_attn.q_proj", q_out, d, True), (p + "self_attn.k_proj", kv_out, d, True),
                  (p + "self_attn.v_proj", kv_out, d, True), (p + "self_attn.o_proj", d, q_out, False),
                  (p + "mlp.gate_proj", inter, d, False), (p + "mlp.up_proj", inter, d, False),
                  (p + "mlp.down_proj", d, inter, False)]


def plan(cfg, fmt, dense_dtype):
    """[(name, safetensors dtype, shape, source)] in file order; source = (kind, linear prefix or None)."""
    d, vocab = cfg["hidden_size"], cfg["vocab_size"]
    out = [("model.embed_tokens.weight", dense_dtype, [vocab, d], ("dense", None))]
    for i, layer in linears(cfg):
        out.append((f"model.layers.{i}.input_layernorm.weight", dense_dtype, [d], ("ones", None)))
        for prefix, n, k, has_bias in layer:
            if prefix.endswith("o_proj"):
                out.append((f"model.layers.{i}.post_attention_layernorm.weight", dense_dtype, [d], ("ones", None)))
            if fmt == "fp16":
                out.append((prefix + ".weight", dense_dtype, [n, k], ("dense", prefix)))
            elif fmt == "w8a8-fp8":
                out.append((prefix + ".weight", "F8_E4M3", [n, k], ("fp8_weight", prefix)))
                out.append((prefix + ".weight_scale", dense_dtype, [n, 1], ("fp8_scale", prefix)))
            elif fmt == "w8a8-fp8-block":
                out.append((prefix + ".weight", "F8_E4M3", [n, k], ("fp8b_weight", prefix)))
                out.append((prefix + ".weight_scale_inv", "F32", [-(-n // FP8_BLOCK), -(-k // FP8_BLOCK)],
                            ("fp8b_scale", prefix)))
            elif fmt == "w8a8-int8":
                out.append((prefix + ".weight", "I8", [n, k], ("int8_weight", prefix)))
                out.append((prefix + ".weight_scale", dense_dtype, [n, 1], ("int8_scale", prefix)))
            else:
                if k % GPTQ_GROUP or n % 8:
                    sys.exit(f"{prefix}: K={k} is not a multiple of {GPTQ_GROUP} or N={n} of 8 (GPTQ layout)")
                out.append((prefix + ".qweight", "I32", [k // 8, n], ("qweight", prefix)))
                out.append((prefix + ".qzeros", "I32", [k // GPTQ_GROUP, n // 8], ("qzeros", prefix)))
                out.append((prefix + ".scales", "F16", [k // GPTQ_GROUP, n], ("scales", prefix)))
                out.append((prefix + ".g_idx", "I32", [k], ("g_idx", prefix)))
            if has_bias:
                out.append((prefix + ".bias", dense_dtype, [n], ("bias", prefix)))
    out.append(("model.norm.weight", dense_dtype, [d], ("ones", None)))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", dense_dtype, [vocab, d], ("dense", None)))
    return out


def num_bytes(dtype, shape):
    n = BYTES_PER[dtype]
    for s in shape:
        n *= s
    return n


def tensor_seed(seed, name):
    """The same name gets the same random values in every format (one model, three layouts)."""
    return (seed * 1000003 + zlib.crc32(name.encode())) % (2**31)


# ----------------------------------------------------------------------------- backends

class TorchBackend:
    """Random values and quantisation on the GPU; host bytes through uint8 views."""

    def __init__(self, device):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        self.dtypes = {"F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32,
                       "F8_E4M3": torch.float8_e4m3fn, "I8": torch.int8, "I32": torch.int32}

    def normal(self, shape, seed):
        g = self.torch.Generator(device=self.device)
        g.manual_seed(seed)
        return self.torch.randn(*shape, generator=g, device=self.device, dtype=self.torch.float32) * WEIGHT_STD

    def ones(self, shape):
        return self.torch.ones(*shape, device=self.device, dtype=self.torch.float32)

    def fp8(self, w):  # w [N, K] f32 -> (e4m3 [N, K], scale f32 [N, 1])
        scale = (w.abs().amax(dim=1, keepdim=True) / E4M3_MAX).clamp_min(1e-12)
        q = (w / scale).clamp(-E4M3_MAX, E4M3_MAX).to(self.torch.float8_e4m3fn)
        return q, scale

    def fp8_block(self, w):  # w [N, K] f32 -> (e4m3 [N, K], scale f32 [ceil(N/128), ceil(K/128)])
        t, (n, k), b = self.torch, w.shape, FP8_BLOCK
        nb, kb = -(-n // b), -(-k // b)
        padded = t.zeros(nb * b, kb * b, device=self.device, dtype=t.float32)
        padded[:n, :k] = w
        scale = (padded.abs().reshape(nb, b, kb, b).amax(dim=(1, 3)) / E4M3_MAX).clamp_min(1e-12)
        full = scale.repeat_interleave(b, dim=0).repeat_interleave(b, dim=1)[:n, :k]
        q = (w / full).clamp(-E4M3_MAX, E4M3_MAX).to(t.float8_e4m3fn)
        return q, scale

    def int8(self, w):  # w [N, K] f32 -> (int8 [N, K], scale f32 [N, 1])
        scale = (w.abs().amax(dim=1, keepdim=True) / INT8_DIVISOR).clamp_min(1e-12)
        q = self.torch.round(w / scale).clamp(-128, 127).to(self.torch.int8)
        return q, scale

    def gptq(self, w):  # w [N, K] f32 -> (qweight [K/8, N] i32, scales [K/G, N] f16, q codes)
        t = self.torch
        n, k = w.shape
        wt = w.t().reshape(k // GPTQ_GROUP, GPTQ_GROUP, n)
        scales = (wt.abs().amax(dim=1) * 2 / 15).clamp_min(1e-6).to(t.float16)          # [K/G, N]
        q = t.clamp(t.round(wt / scales.float()[:, None, :]) + 8, 0, 15).to(t.int64)    # [K/G, G, N]
        q = q.reshape(k // 8, 8, n)
        shifts = (t.arange(8, device=self.device, dtype=t.int64) * 4)[None, :, None]
        words = (q << shifts).sum(dim=1)                                                 # [K/8, N] < 2^32
        words = t.where(words >= 2**31, words - 2**32, words).to(t.int32)
        return words, scales

    def full_i32(self, shape, value):
        return self.torch.full(shape, value, dtype=self.torch.int32, device=self.device)

    def g_idx(self, k):
        return (self.torch.arange(k, device=self.device, dtype=self.torch.int32) // GPTQ_GROUP)

    def host_bytes(self, x, dtype):
        x = x.to(self.dtypes[dtype]).contiguous()
        return x.view(self.torch.uint8).cpu().numpy()  # the raw little-endian bytes, no copy on write


class NumpyBackend:
    """The same on the CPU with numpy and ml_dtypes (bfloat16, float8_e4m3fn)."""

    def __init__(self):
        import numpy as np
        import ml_dtypes
        self.np = np
        self.dtypes = {"F16": np.float16, "BF16": ml_dtypes.bfloat16, "F32": np.float32,
                       "F8_E4M3": ml_dtypes.float8_e4m3fn, "I8": np.int8, "I32": np.int32}

    def normal(self, shape, seed):
        rng = self.np.random.default_rng(seed)
        return rng.standard_normal(shape, dtype=self.np.float32) * self.np.float32(WEIGHT_STD)

    def ones(self, shape):
        return self.np.ones(shape, dtype=self.np.float32)

    def fp8(self, w):
        np = self.np
        scale = np.maximum(np.abs(w).max(axis=1, keepdims=True) / E4M3_MAX, 1e-12).astype(np.float32)
        q = np.clip(w / scale, -E4M3_MAX, E4M3_MAX).astype(self.dtypes["F8_E4M3"])
        return q, scale

    def fp8_block(self, w):
        np, (n, k), b = self.np, w.shape, FP8_BLOCK
        nb, kb = -(-n // b), -(-k // b)
        padded = np.zeros((nb * b, kb * b), dtype=np.float32)
        padded[:n, :k] = w
        scale = np.maximum(np.abs(padded).reshape(nb, b, kb, b).max(axis=(1, 3)) / E4M3_MAX, 1e-12).astype(np.float32)
        full = np.repeat(np.repeat(scale, b, axis=0), b, axis=1)[:n, :k]
        q = np.clip(w / full, -E4M3_MAX, E4M3_MAX).astype(self.dtypes["F8_E4M3"])
        return q, scale

    def int8(self, w):
        np = self.np
        scale = np.maximum(np.abs(w).max(axis=1, keepdims=True) / INT8_DIVISOR, 1e-12).astype(np.float32)
        q = np.clip(np.rint(w / scale), -128, 127).astype(np.int8)
        return q, scale

    def gptq(self, w):
        np = self.np
        n, k = w.shape
        wt = w.T.reshape(k // GPTQ_GROUP, GPTQ_GROUP, n)
        scales = np.maximum(np.abs(wt).max(axis=1) * 2 / 15, 1e-6).astype(np.float16)
        q = np.clip(np.round(wt / scales.astype(np.float32)[:, None, :]) + 8, 0, 15).astype(np.uint64)
        q = q.reshape(k // 8, 8, n)
        shifts = (np.arange(8, dtype=np.uint64) * 4)[None, :, None]
        words = (q << shifts).sum(axis=1).astype(np.uint32).view(np.int32)
        return words, scales

    def full_i32(self, shape, value):
        return self.np.full(shape, value, dtype=self.np.int32)

    def g_idx(self, k):
        return (self.np.arange(k, dtype=self.np.int32) // GPTQ_GROUP).astype(self.np.int32)

    def host_bytes(self, x, dtype):
        # ml_dtypes arrays do not export a buffer: their bytes go out as uint8.
        return self.np.ascontiguousarray(x.astype(self.dtypes[dtype])).view(self.np.uint8)


# ----------------------------------------------------------------------------- writing

class TensorSource:
    """Makes each planned tensor; a linear's derived tensors (fp8 weight + scale, GPTQ
    qweight/qzeros/scales/g_idx, bias) come from one random matrix made once."""

    def __init__(self, backend, seed, cfg):
        self.b, self.seed, self.cfg = backend, seed, cfg
        self.cache = {}

    def make(self, name, dtype, shape, source):
        kind, prefix = source
        b = self.b
        if kind == "ones":
            return b.ones(shape)
        if kind == "dense" and prefix is None:
            return b.normal(shape, tensor_seed(self.seed, name))
        if kind == "bias":
            return b.normal(shape, tensor_seed(self.seed, name))
        if prefix not in self.cache:
            self.cache.clear()  # one linear at a time: bounded memory
            w = b.normal(self.shape_of(prefix), tensor_seed(self.seed, prefix + ".weight"))
            if kind == "dense":
                self.cache[prefix] = {"dense": w}
            elif kind.startswith("fp8b"):
                q, scale = b.fp8_block(w)
                self.cache[prefix] = {"fp8b_weight": q, "fp8b_scale": scale}
            elif kind.startswith("fp8"):
                q, scale = b.fp8(w)
                self.cache[prefix] = {"fp8_weight": q, "fp8_scale": scale}
            elif kind.startswith("int8"):
                q, scale = b.int8(w)
                self.cache[prefix] = {"int8_weight": q, "int8_scale": scale}
            else:
                qweight, scales = b.gptq(w)
                n, k = w.shape
                self.cache[prefix] = {"qweight": qweight, "scales": scales,
                                      # v1 stores zero point 8 as 7: every nibble 7
                                      "qzeros": b.full_i32([k // GPTQ_GROUP, n // 8], 0x77777777),
                                      "g_idx": b.g_idx(k)}
        return self.cache[prefix][kind]

    def shape_of(self, prefix):
        for _, layer in linears(self.cfg):
            for p, n, k, _ in layer:
                if p == prefix:
                    return [n, k]
        raise KeyError(prefix)


def write_shards(out_dir, tensors, source, backend, shard_bytes):
    """Plans shards of about shard_bytes, writes each header then its tensors as they are made."""
    shards, current, size = [], [], 0
    for t in tensors:
        nb = num_bytes(t[1], t[2])
        if current and size + nb > shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(t)
        size += nb
    shards.append(current)
    names = (["model.safetensors"] if len(shards) == 1 else
             [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))])
    weight_map, total = {}, 0
    for shard_name, shard in zip(names, shards):
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for name, dtype, shape, _ in shard:
            nb = num_bytes(dtype, shape)
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nb]}
            offset += nb
            weight_map[name] = shard_name
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * ((8 - len(text) % 8) % 8)  # padded like the reference writer
        t0 = time.time()
        with open(os.path.join(out_dir, shard_name), "wb") as f:
            f.write(len(text).to_bytes(8, "little"))
            f.write(text)
            for name, dtype, shape, src in shard:
                data = backend.host_bytes(source.make(name, dtype, shape, src), dtype)
                if data.nbytes != num_bytes(dtype, shape):
                    sys.exit(f"{name}: made {data.nbytes} bytes, planned {num_bytes(dtype, shape)}")
                f.write(data.data)
        total += offset
        dt = time.time() - t0
        print(f"  {shard_name}: {len(shard)} tensors, {offset / 1e9:.2f} GB in {dt:.1f} s "
              f"({offset / 1e9 / max(dt, 1e-9):.2f} GB/s)", flush=True)
    if len(shards) > 1:
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory (written as OUT.partial, then renamed)")
    ap.add_argument("--format", required=True, choices=["fp16", "w8a8-fp8", "w8a8-fp8-block", "w8a8-int8", "w4a16"])
    ap.add_argument("--config", default="qwen2.5-7b",
                    help="qwen2.5-7b (default), tiny, or a config.json path whose shape to use")
    ap.add_argument("--num-layers", type=int, default=0, help="override num_hidden_layers (0: the config's)")
    ap.add_argument("--dtype", default="", choices=["", "float16", "bfloat16"],
                    help="dtype of the unquantised tensors (default: float16, bfloat16 for the w8a8 formats "
                         "as RedHatAI's and llm-compressor's)")
    ap.add_argument("--tokenizer-dir", default="", help="copy tokenizer.json, tokenizer_config.json, ... from here")
    ap.add_argument("--backend", default="auto", choices=["auto", "torch", "numpy"])
    ap.add_argument("--device", default="cuda", help="torch device (cuda, cpu)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-gb", type=float, default=4.0, help="shard size in GB (1e9 bytes)")
    ap.add_argument("--config-only", action="store_true",
                    help="config.json, generation_config.json and the tokenizer, no weights (a shape and a "
                         "tokenizer for `crosspoint sweep --model` when fp16 itself is not swept)")
    args = ap.parse_args()

    if args.config == "qwen2.5-7b":
        cfg = dict(QWEN25_7B)
    elif args.config == "tiny":
        cfg = dict(TINY)
    else:
        with open(args.config) as f:
            cfg = dict(QWEN25_7B, **{k: v for k, v in json.load(f).items() if k != "quantization_config"})
    if args.num_layers > 0:
        cfg["num_hidden_layers"] = cfg["max_window_layers"] = args.num_layers
    # Transformers' own key for where a model came from; crosspoint's reports name the model by it.
    if args.config in ("qwen2.5-7b", "tiny"):
        shape = "Qwen2.5-7B-Instruct" if args.config == "qwen2.5-7b" else "tiny Qwen2"
        layers = f", {cfg['num_hidden_layers']} layers" if args.num_layers > 0 else ""
        cfg["_name_or_path"] = f"{shape} shape{layers}, random weights"
    dtype = args.dtype or ("bfloat16" if args.format in ("w8a8-fp8", "w8a8-fp8-block", "w8a8-int8") else "float16")
    cfg["torch_dtype"] = dtype
    if args.format == "w4a16":
        cfg["torch_dtype"] = "float16"  # GPTQ scales are fp16; Qwen's GPTQ-Int4 config says float16
        dtype = "float16"
        cfg["quantization_config"] = GPTQ_CONFIG
    elif args.format == "w8a8-fp8":
        cfg["quantization_config"] = FP8_CONFIG
    elif args.format == "w8a8-fp8-block":
        cfg["quantization_config"] = FP8_BLOCK_CONFIG
    elif args.format == "w8a8-int8":
        cfg["quantization_config"] = INT8_CONFIG
    dense = "F16" if dtype == "float16" else "BF16"

    backend_name = "none" if args.config_only else args.backend
    if backend_name == "auto":
        try:
            import torch  # noqa: F401
            backend_name = "torch"
        except ImportError:
            backend_name = "numpy"
    backend = None
    if backend_name == "torch":
        backend = TorchBackend(args.device)
    elif backend_name == "numpy":
        backend = NumpyBackend()

    partial = args.out.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    t0 = time.time()
    print(f"{args.format}: {cfg['num_hidden_layers']} layers, hidden {cfg['hidden_size']}, vocab {cfg['vocab_size']}, "
          f"{dense} dense tensors, backend {backend_name} -> {args.out}", flush=True)
    tensors = [] if args.config_only else plan(cfg, args.format, dense)
    total = 0 if args.config_only else write_shards(partial, tensors, TensorSource(backend, args.seed, cfg), backend,
                                                    int(args.shard_gb * 1e9))
    with open(os.path.join(partial, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(partial, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"], "do_sample": False}, f,
                  indent=2)
    if args.tokenizer_dir:
        copied = 0
        for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json"):
            src = os.path.join(args.tokenizer_dir, name)
            if os.path.isfile(src):
                shutil.copy(src, os.path.join(partial, name))
                copied += 1
        if not os.path.isfile(os.path.join(partial, "tokenizer.json")):
            sys.exit(f"--tokenizer-dir {args.tokenizer_dir}: no tokenizer.json there")
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(partial, args.out)
    seconds = time.time() - t0
    result = {"format": args.format, "dir": args.out, "bytes": total, "num_tensors": len(tensors),
              "num_layers": cfg["num_hidden_layers"], "seconds": round(seconds, 2),
              "gb_per_s": round(total / 1e9 / max(seconds, 1e-9), 3), "backend": backend_name}
    print(f"{args.format}: {total / 1e9:.2f} GB in {seconds:.1f} s", flush=True)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

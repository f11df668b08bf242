"""Quantise the default model with the reference library (llm-compressor, CPU) so that
`crosspoint eval` can score the library's output beside crosspoint's own at equal settings.

    python benchmarks/quant_peer_llmcompressor.py gptq --group-size 64 --calib-samples 32 \
        --calib-max-tokens 128 [--actorder static|weight] --out DIR
    python benchmarks/quant_peer_llmcompressor.py fp8 --out DIR

Needs llmcompressor (0.14) + compressed-tensors + torch + transformers + tokenizers +
safetensors in the running Python (docs/quantization.md, "Against the reference library",
says how the venv was made). Not a test: minutes of CPU.

gptq: llm-compressor's GPTQModifier, int4 symmetric groups (its W4A16 preset with our group
size), dampening 0.01, block 128, lm_head left dense, calibrated on exactly the samples
`crosspoint quantize` uses (ShareGPT conversations in file order, prompt + "\n" + reply,
at least 16 tokens, cut at --calib-max-tokens, tokenised by the model's tokenizer.json).
The library keeps its result as fake-quantised weights plus weight_scale/weight_zero_point;
this script recovers the int4 codes, checks that scale * code reproduces every weight
exactly, and writes a GPTQ v1 checkpoint in the layout crosspoint writes (so both run
through the same W4A16 kernel).
fp8: the library's FP8_DYNAMIC preset (lm_head ignored), saved compressed by the library
itself (compressed-tensors float-quantized), which crosspoint loads directly.
"""
import argparse
import json
import os
import pathlib
import shutil

import numpy as np

CACHE = pathlib.Path(os.environ.get("CROSSPOINT_CACHE", pathlib.Path.home() / ".cache" / "crosspoint"))
DEFAULT_MODEL = CACHE / "models" / "SmolLM2-135M-Instruct"
SHAREGPT = CACHE / "datasets" / "ShareGPT_V3_complete_subset.json"
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "generation_config.json",
                   "vocab.json", "merges.txt", "chat_template.jinja", "added_tokens.json"]


def sharegpt_entries(limit=5000):
    """The first entries of the ShareGPT list, one at a time: the setup script's copy can be
    cut short at its end (the C++ loader accepts that too), so the file is not parsed whole."""
    text = SHAREGPT.read_text(encoding="utf-8")
    decoder, idx = json.JSONDecoder(), text.index("[") + 1
    for _ in range(limit):
        while idx < len(text) and text[idx] in " \t\r\n,":
            idx += 1
        if idx >= len(text) or text[idx] == "]":
            return
        try:
            entry, idx = decoder.raw_decode(text, idx)
        except json.JSONDecodeError:
            return
        yield entry


def calibration_ids(model_dir, num_samples, max_tokens, min_tokens=16, skip=0):
    """The same samples as src/cli/calibration_text.cc load_text_samples()."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    samples = []
    for entry in list(sharegpt_entries())[skip:]:
        conv = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(conv, list) or len(conv) < 2:
            continue
        prompt, reply = conv[0].get("value", ""), conv[1].get("value", "")
        ids = tok.encode(prompt + "\n" + reply, add_special_tokens=False).ids
        if len(ids) < min_tokens:
            continue
        samples.append(ids[:max_tokens])
        if len(samples) == num_samples:
            break
    return samples


def load_model(model_dir, dtype):
    import torch
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=getattr(torch, dtype))


def run_oneshot(model, recipe, samples):
    from datasets import Dataset
    from llmcompressor import oneshot
    ds = Dataset.from_dict({"input_ids": samples, "attention_mask": [[1] * len(s) for s in samples]})
    oneshot(model=model, dataset=ds, recipe=recipe, num_calibration_samples=len(samples),
            max_seq_length=max(len(s) for s in samples), shuffle_calibration_samples=False)


def copy_tokenizer(model_dir, out):
    for name in TOKENIZER_FILES:
        if (model_dir / name).exists():
            shutil.copy(model_dir / name, out / name)


def pack_gptq_v1(codes, zeros, scales, group_size):
    """codes [K, N] 0..15, zeros [G, N], scales [G, N] fp16 -> qweight/qzeros/scales/g_idx."""
    K, N = codes.shape
    qweight = np.zeros((K // 8, N), dtype=np.uint32)
    for i in range(8):
        qweight |= codes[i::8].astype(np.uint32) << np.uint32(4 * i)
    zm1 = (zeros.astype(np.int64) - 1) & 0xF
    qzeros = np.zeros((zeros.shape[0], N // 8), dtype=np.uint32)
    for i in range(8):
        qzeros |= zm1[:, i::8].astype(np.uint32) << np.uint32(4 * i)
    g_idx = (np.arange(K) // group_size).astype(np.int32)
    return qweight.view(np.int32), qzeros.view(np.int32), scales.astype(np.float16), g_idx


def gptq(args):
    import torch
    from llmcompressor.modifiers.gptq import GPTQModifier
    from safetensors.numpy import load_file, save_file
    model_dir, out = pathlib.Path(args.model), pathlib.Path(args.out)
    samples = calibration_ids(model_dir, args.calib_samples, args.calib_max_tokens)
    print(f"calibration: {len(samples)} samples, {sum(map(len, samples))} tokens")
    # fp32 (the fp16 weights widened): torch's CPU fp16 matmuls are far slower. scale_dtype
    # rounds the group scales to fp16 before the codes are chosen, as the checkpoint stores them
    # (crosspoint's quantiser does the same).
    model = load_model(model_dir, "float32")
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": args.group_size,
               "scale_dtype": "float16"}
    recipe = GPTQModifier(config_groups={"group_0": {"targets": ["Linear"], "weights": weights}}, ignore=["lm_head"],
                          actorder=None if args.actorder == "none" else args.actorder,
                          dampening_frac=args.damp, block_size=128,
                          batched_quantization=4)  # same-shape linears of a layer together; results unchanged
    run_oneshot(model, recipe, samples)

    dense = load_file(str(model_dir / "model.safetensors"))
    tensors, worst = {}, 0.0
    for name, module in model.named_modules():
        if not hasattr(module, "weight_scale"):
            continue
        w = module.weight.detach().float().numpy()               # [N, K] fake-quantised
        scale = module.weight_scale.detach().to(torch.float16).numpy()  # [N, K / G]
        zp = module.weight_zero_point.detach().float().numpy()   # [N, K / G] (0 for symmetric)
        s_full = np.repeat(scale.astype(np.float32), args.group_size, axis=1)
        z_full = np.repeat(zp, args.group_size, axis=1)
        q_signed = np.rint(w / s_full) + z_full                   # -8..7
        # The library's weight is scale * code (in fp32 here): how far from a code, in codes.
        worst = max(worst, float(np.max(np.abs(w / s_full + z_full - q_signed))))
        codes = (q_signed + 8).astype(np.int64).T                 # [K, N] 0..15
        assert codes.min() >= 0 and codes.max() <= 15, name
        zeros = (8 - zp).astype(np.int64).T                       # [G, N] (8 when symmetric)
        qweight, qzeros, scales_t, g_idx = pack_gptq_v1(codes, zeros, scale.T, args.group_size)
        tensors[f"{name}.qweight"], tensors[f"{name}.qzeros"] = qweight, qzeros
        tensors[f"{name}.scales"], tensors[f"{name}.g_idx"] = np.ascontiguousarray(scales_t), g_idx
        del dense[f"{name}.weight"]
    print(f"library weights sit on their int4 grid: max |w / scale - code| = {worst:.3g} codes")
    assert worst < 0.01, "the library's weights are not scale * code: layout misread"
    tensors.update(dense)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((model_dir / "config.json").read_text())
    import llmcompressor
    config["quantization_config"] = {
        "quant_method": "gptq", "bits": 4, "group_size": args.group_size, "desc_act": False, "sym": True,
        "damp_percent": args.damp, "static_groups": True, "true_sequential": False, "checkpoint_format": "gptq",
        "meta": {"quantizer": [f"llmcompressor:{llmcompressor.__version__}"], "actorder": args.actorder,
                 "calib_samples": len(samples), "calib_max_tokens": args.calib_max_tokens}}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    copy_tokenizer(model_dir, out)
    print(f"wrote {out}")


def fp8(args):
    from llmcompressor.modifiers.quantization import QuantizationModifier
    model_dir, out = pathlib.Path(args.model), pathlib.Path(args.out)
    # The stored dtype (fp16): the library then keeps fp16 scales (fp32 would give f32 ones).
    model = load_model(model_dir, args.dtype or "float16")
    from llmcompressor import oneshot
    oneshot(model=model, recipe=QuantizationModifier(targets="Linear", scheme="FP8_DYNAMIC", ignore=["lm_head"]))
    model.save_pretrained(str(out), save_compressed=True)
    copy_tokenizer(model_dir, out)
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scheme", choices=["gptq", "fp8"])
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--out", required=True)
    parser.add_argument("--group-size", type=int, default=64)
    parser.add_argument("--calib-samples", type=int, default=32)
    parser.add_argument("--calib-max-tokens", type=int, default=128)
    parser.add_argument("--actorder", default="none", choices=["none", "static", "weight"])
    parser.add_argument("--damp", type=float, default=0.01)
    parser.add_argument("--dtype", help="fp8: torch dtype to load the model in (default float16)")
    parser.add_argument("--dump-calibration", help="write the calibration token ids as JSON here and stop")
    args = parser.parse_args()
    if args.dump_calibration:
        ids = calibration_ids(pathlib.Path(args.model), args.calib_samples, args.calib_max_tokens)
        pathlib.Path(args.dump_calibration).write_text(json.dumps(ids))
        return
    gptq(args) if args.scheme == "gptq" else fp8(args)


if __name__ == "__main__":
    main()

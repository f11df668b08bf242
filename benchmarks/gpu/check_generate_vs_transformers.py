#!/usr/bin/env python3
"""Greedy output of `crosspoint generate --device cuda` against Hugging Face transformers on the
same random-weight Qwen2 model (runs on the GPU machine; torch + transformers + tokenizers).

1. Builds a small Qwen2 with Qwen2.5-7B's real widths (hidden 3584, 28 heads of 128, 4 KV heads,
   intermediate 18944, vocab 152064, rope_theta 1e6, q/k/v biases) but --num-layers layers,
   every weight seeded normal(0, 0.02) (norms 1), in float16 on the GPU, and saves it as a
   Hugging Face directory (model.safetensors + config.json + the Qwen2.5 tokenizer).
2. For each prompt: transformers' greedy continuation (its own forward with a KV cache, eager
   attention, fp16), keeping the top1 - top2 logit margin of every step; then
   `crosspoint generate --device cuda --temperature 0 --ids` on the directory.
3. Compares the token ids: the first divergence, the margin transformers had there (a margin
   under --tie-margin is a near tie that fp16 rounding may flip either way), and the
   agreement = tokens equal before the first divergence / tokens compared.

Writes --out (JSON) and prints a table. Exit 0 when every prompt agrees fully or diverges
only at a near tie; 1 otherwise; 2 when a step could not run.

  python3 check_generate_vs_transformers.py --crosspoint crosspoint --tokenizer-dir DIR --out check.json
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_random_checkpoint import QWEN25_7B  # noqa: E402

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Once upon a time, in a small village by the sea,",
    "Explain the difference between a list and a tuple in Python.",
]


def build_model(args, torch):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = dict(QWEN25_7B, num_hidden_layers=args.num_layers, max_window_layers=args.num_layers, torch_dtype="float16")
    kwargs = {k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")}
    # transformers >= 5 reads RoPE settings from rope_parameters; older versions from rope_theta.
    kwargs["rope_parameters"] = {"rope_type": "default", "rope_theta": cfg["rope_theta"]}
    config = Qwen2Config(**kwargs)
    try:
        config._attn_implementation = "eager"  # plain softmax attention, no fused kernel choices
    except Exception as e:  # noqa: BLE001 (older/newer transformers name it differently)
        print(f"note: could not select eager attention ({e!r}); transformers' default is used", flush=True)
    torch.manual_seed(args.seed)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config)
    model = model.half().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)
    # model.half() also turned the RoPE inverse frequencies into fp16 (and transformers may have
    # built them for another theta field): set them, in fp32, to HF's default-rope formula at
    # the checkpoint's theta, which is what config.json says and crosspoint computes.
    rotary = getattr(model.model, "rotary_emb", None)
    if rotary is None or not hasattr(rotary, "inv_freq"):
        raise SystemExit("no model.model.rotary_emb.inv_freq: cannot pin transformers' RoPE to rope_theta")
    want = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, 128, 2, dtype=torch.int64).float() / 128))
    for buf in ("inv_freq", "original_inv_freq"):
        if hasattr(rotary, buf):
            rotary.register_buffer(buf, want.to("cuda"), persistent=False)
    if getattr(rotary, "attention_scaling", 1.0) != 1.0:
        raise SystemExit(f"transformers' RoPE has attention_scaling {rotary.attention_scaling}, not 1")
    os.makedirs(args.model_dir, exist_ok=True)
    from safetensors.torch import save_file
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, os.path.join(args.model_dir, "model.safetensors"), metadata={"format": "pt"})
    # Our own config.json (the Qwen2.5 file's keys), not the transformers version's rewrite of it.
    cfg["architectures"] = ["Qwen2ForCausalLM"]
    with open(os.path.join(args.model_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        src = os.path.join(args.tokenizer_dir, name)
        if os.path.isfile(src):
            shutil.copy(src, os.path.join(args.model_dir, name))
    return model


def hf_greedy(model, torch, ids, num_tokens):
    """Greedy ids and the top1 - top2 margin of each step (fp16 logits, as generated)."""
    out, margins = [], []
    with torch.no_grad():
        x = torch.tensor([ids], device="cuda")
        res = model(input_ids=x, use_cache=True)
        past = res.past_key_values
        for _ in range(num_tokens):
            logits = res.logits[0, -1].float()
            top2 = torch.topk(logits, 2)
            token = int(top2.indices[0])
            out.append(token)
            margins.append(float(top2.values[0] - top2.values[1]))
            res = model(input_ids=torch.tensor([[token]], device="cuda"), past_key_values=past, use_cache=True)
            past = res.past_key_values
    return out, margins


def crosspoint_greedy(args, prompt):
    cmd = [args.crosspoint, "generate", "--device", args.device, "--model", args.model_dir, "--prompt", prompt,
           "--max-tokens", str(args.max_tokens), "--temperature", "0", "--ids", "--stats"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    seconds = time.time() - t0
    if r.returncode != 0:
        return None, seconds, (r.stderr or r.stdout).strip().splitlines()[-3:]
    last = [line for line in r.stdout.strip().splitlines() if line.startswith("[")]
    if not last:
        return None, seconds, ["no id list in the output: " + r.stdout[-300:]]
    return json.loads(last[-1]), seconds, r.stderr.strip().splitlines()[-4:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crosspoint", default="crosspoint", help="the crosspoint executable (bundle wrapper)")
    ap.add_argument("--tokenizer-dir", required=True, help="the Qwen2.5 tokenizer files")
    ap.add_argument("--model-dir", default="/tmp/crosspoint-check-qwen2", help="where the random model is saved")
    ap.add_argument("--num-layers", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--num-prompts", type=int, default=len(PROMPTS))
    ap.add_argument("--device", default="cuda", help="crosspoint generate --device (cuda; cpu for the CPU path)")
    ap.add_argument("--tie-margin", type=float, default=0.05, help="logit gap under which a flip is a near tie")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--out", default="check.json")
    args = ap.parse_args()

    import torch
    from tokenizers import Tokenizer
    t0 = time.time()
    model = build_model(args, torch)
    build_s = time.time() - t0
    tok = Tokenizer.from_file(os.path.join(args.tokenizer_dir, "tokenizer.json"))
    results, status = [], 0
    for prompt in PROMPTS[:args.num_prompts]:
        ids = tok.encode(prompt, add_special_tokens=False).ids
        hf_ids, margins = hf_greedy(model, torch, ids, args.max_tokens)
        xp_ids, seconds, log_tail = crosspoint_greedy(args, prompt)
        row = {"prompt": prompt, "prompt_tokens": len(ids), "transformers": hf_ids, "crosspoint": xp_ids,
               "crosspoint_s": round(seconds, 2), "crosspoint_log_tail": log_tail,
               "min_margin": round(min(margins), 4) if margins else None}
        if xp_ids is None:
            row["verdict"] = "crosspoint failed"
            status = max(status, 2)
        else:
            n = min(len(xp_ids), len(hf_ids))
            first = next((i for i in range(n) if xp_ids[i] != hf_ids[i]), None)
            row["compared"] = n
            row["first_divergence"] = first
            row["agreement"] = round((n if first is None else first) / max(n, 1), 4)
            if first is None:
                row["verdict"] = "identical" if len(xp_ids) == len(hf_ids) else f"identical for {n} (stopped at eos)"
            else:
                row["margin_at_divergence"] = round(margins[first], 4)
                near_tie = margins[first] < args.tie_margin
                row["verdict"] = "near tie" if near_tie else "DIFFERENT"
                if not near_tie:
                    status = max(status, 1)
        results.append(row)
        print(f"{row['verdict']:>12}  agreement {row.get('agreement', 0) * 100:5.1f} %  first divergence "
              f"{row.get('first_divergence')}  margin {row.get('margin_at_divergence', '-')}  "
              f"crosspoint {seconds:.1f} s  {prompt[:40]!r}", flush=True)
    total = sum(r.get("compared", 0) for r in results)
    agreed = sum(r.get("compared", 0) * r.get("agreement", 0) for r in results)
    summary = {"model": f"Qwen2 random, {args.num_layers} layers, Qwen2.5-7B widths, fp16", "device": args.device,
               "max_tokens": args.max_tokens, "tie_margin": args.tie_margin, "build_s": round(build_s, 1),
               "agreement": round(agreed / max(total, 1), 4), "status": status, "prompts": results,
               "transformers_attention": "eager"}
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"overall agreement {summary['agreement'] * 100:.1f} % over {total} tokens; status {status} "
          f"(0 ok, 1 a divergence that is not a near tie, 2 crosspoint failed)")
    sys.exit(status)


if __name__ == "__main__":
    main()

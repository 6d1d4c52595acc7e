"""In-process rates of a checkpoint on this CPU with transformers (float32): prefill tokens/s, and decode
tokens/s at batch 1 (how HuggingFacePipeline answers each of RAGAS's calls) and at batch 16.

    python benchmarks/reported/2026-12-06-cpu-2core-qwen-groundedness-layout/inprocess_rates.py CHECKPOINT_DIR
"""

import json
import sys
import time
from pathlib import Path

import torch
import transformers

checkpoint = sys.argv[1]
torch.manual_seed(0)
tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
started = time.perf_counter()
model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, dtype=torch.float32).eval()
out = {"load_s": time.perf_counter() - started, "threads": torch.get_num_threads()}
text = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")  # any long text
ids = tokenizer(text, return_tensors="pt").input_ids
with torch.inference_mode():
    model(ids[:, :64])  # warm-up
    for n in (512, 1024):
        started = time.perf_counter()
        model(ids[:, :n])
        out[f"prefill_{n}_tok_s"] = n / (time.perf_counter() - started)
    for batch in (1, 16):
        prompt = ids[:, 1000:1100].repeat(batch, 1)
        started = time.perf_counter()
        model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=33, min_new_tokens=33,
                       do_sample=False, pad_token_id=tokenizer.eos_token_id)  # fmt: skip
        seconds = time.perf_counter() - started
        prefill = 100 * batch / out["prefill_512_tok_s"]  # the 100-token prompt, at the rate above
        out[f"decode_b{batch}_tok_s"] = 32 * batch / (seconds - prefill)
        out[f"decode_b{batch}_wall_s"] = seconds
print(json.dumps(out, indent=1))

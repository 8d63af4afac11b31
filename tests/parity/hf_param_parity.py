"""Compares bertc's parameters (names, shapes, total) with Hugging Face BertForPreTraining built
from the same [model] section. Usage: hf_parity.py BERTC CONFIG.toml..."""
import json
import subprocess
import sys
import tomllib

import torch
from transformers import BertConfig, BertForPreTraining

bertc, configs = sys.argv[1], sys.argv[2:]
ok = True
for path in configs:
    with open(path, "rb") as f:
        model_keys = tomllib.load(f)["model"]  # bertc's [model] keys are BertConfig's names
    with torch.device("meta"):
        model = BertForPreTraining(BertConfig(**model_keys))
    # The decoder shares the word embeddings and its bias (transformers 4.x ties them when it builds
    # the model, 5.x in post_init and only while tie_word_embeddings holds): bertc's parameter list
    # assumes both ties.
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight, "decoder weight not tied"
    assert model.cls.predictions.decoder.bias is model.cls.predictions.bias, "decoder bias not tied"
    # named_parameters() lists a tied tensor once, under its first name, as bertc does.
    hf = {name: list(p.shape) for name, p in model.named_parameters()}
    hf_total = sum(p.numel() for p in model.parameters())
    params = json.loads(subprocess.check_output([bertc, "compile", path, "--emit", "params", "--json"]))
    ours = {p["name"]: p["shape"] for p in params}
    ours_total = sum(p["elements"] for p in params)
    missing, extra = sorted(hf.keys() - ours.keys()), sorted(ours.keys() - hf.keys())
    shape = sorted(n for n in hf.keys() & ours.keys() if hf[n] != ours[n])
    same = not missing and not extra and not shape and hf_total == ours_total
    ok &= same
    print(f"parity {path}: {'same' if same else 'DIFFERENT'}: {len(ours)} tensors, bertc {ours_total:,} vs "
          f"transformers {hf_total:,} parameters; missing {missing[:5]} extra {extra[:5]} shape {shape[:5]}")
sys.exit(0 if ok else 1)

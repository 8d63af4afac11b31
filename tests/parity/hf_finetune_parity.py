"""bertc eval of a [finetune] config against Hugging Face BertForSequenceClassification (classes
and regression) and BertForTokenClassification: the same weights and batch give the same loss and
the same gradient for every parameter.

Usage: hf_finetune_parity.py BERTC MODEL_CONFIG.toml WORK_DIR [--device cpu|cuda]
MODEL_CONFIG's [model] sizes are used (examples/bert-tiny.toml). Needs torch, transformers and
safetensors.

Tolerances as hf_eval_parity.py's: fp32 on both sides, other reduction orders (a few ulps per
operation): 1e-5 relative for the loss, 1e-4 of each tensor's largest gradient; a wrong head (a
missing pooler, dropout left on, a mean over padding rows) is off by 1e-2 or more.
"""
import os
import re
import subprocess
import sys
import tomllib

import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertForSequenceClassification, BertForTokenClassification

from gradients import compare_gradients

bertc, config_path, work = sys.argv[1], sys.argv[2], sys.argv[3]
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
os.makedirs(work, exist_ok=True)
with open(config_path, "rb") as f:
    model_keys = tomllib.load(f)["model"]

B, S = 4, 16
TASKS = [("sequence-classification", 3), ("regression", 1), ("token-classification", 4)]


def toml_config(task, labels):
    lines = ['name = "parity"', "[model]"] + [f"{k} = {v!r}".replace("'", '"') for k, v in model_keys.items()]
    lines += ["[train]", f"batch_size = {B}", f"seq_len = {S}",
              "[finetune]", f'task = "{task}"', f"num_labels = {labels}"]
    return "\n".join(lines) + "\n"


def run(task, labels):
    torch.manual_seed(0)
    hf_config = BertConfig(**model_keys, num_labels=labels, attn_implementation="eager")
    if task == "token-classification":
        model = BertForTokenClassification(hf_config)
    else:
        hf_config.problem_type = "regression" if task == "regression" else "single_label_classification"
        model = BertForSequenceClassification(hf_config)
    model = model.float().to(device).eval()  # eval(): dropout off, as bertc eval
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    folder = os.path.join(work, task)
    os.makedirs(folder, exist_ok=True)
    save_file({n: p.detach().cpu().contiguous() for n, p in model.named_parameters()},
              os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.toml"), "w") as f:
        f.write(toml_config(task, labels))

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, model_keys["vocab_size"] - 10, (B, S), generator=g)
    lengths = torch.tensor([S, S - 3, 9, 5])
    mask = (torch.arange(S)[None, :] < lengths[:, None]).long()
    ids = ids * mask
    types = ((torch.arange(S)[None, :] >= lengths[:, None] // 2) & (mask == 1)).long()
    if task == "token-classification":
        hf_labels = torch.randint(0, labels, (B, S), generator=g)
        hf_labels[mask == 0] = -100
        hf_labels[:, 0] = -100  # [CLS] counts for nothing, as a word's later pieces
        ours, weights = hf_labels.clamp(min=0), (hf_labels != -100).float()
    elif task == "regression":
        hf_labels = torch.randn(B, generator=g)
        ours, weights = hf_labels, torch.ones(B)
    else:
        hf_labels = torch.randint(0, labels, (B,), generator=g)
        ours, weights = hf_labels, torch.ones(B)
    batch = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": ours,
             "label_weights": weights}
    save_file({k: v.contiguous() for k, v in batch.items()}, os.path.join(folder, "batch.safetensors"))
    out = model(input_ids=ids.to(device), token_type_ids=types.to(device), attention_mask=mask.to(device),
                labels=hf_labels.to(device))
    out.loss.backward()

    grads_file = os.path.join(folder, "grads.safetensors")
    text = subprocess.run([bertc, "eval", os.path.join(folder, "config.toml"), "--init",
                           os.path.join(folder, "model.safetensors"), "--batch",
                           os.path.join(folder, "batch.safetensors"), "--dump-grads", grads_file],
                          check=True, capture_output=True, text=True).stdout
    ours_loss = float(re.search(r"^loss (\S+)$", text, re.M).group(1))
    rel = abs(ours_loss - out.loss.item()) / max(abs(out.loss.item()), 1e-12)
    failed = [f"loss ({rel:.1e})"] if rel > 1e-5 else []
    print(f"parity {task} loss: bertc {ours_loss:.7f} transformers {out.loss.item():.7f} rel diff {rel:.1e}")
    our_grads = load_file(grads_file)
    worst = compare_gradients(model, our_grads, failed)
    print(f"parity {task} gradients: {len(our_grads)} tensors, worst max-abs diff / tensor max = {worst:.1e}")
    return failed


failures = []
for task, labels in TASKS:
    failures += [f"{task}: {f}" for f in run(task, labels)]
if failures:
    print("FAIL:", ", ".join(failures))
    sys.exit(1)
print("PASS")

"""bertc eval against Hugging Face BertForPreTraining: the same weights and batch give the same
MLM, NSP and total loss and the same gradient for every parameter.

Usage: hf_eval_parity.py BERTC CONFIG.toml WORK_DIR [--device cpu|cuda]
Needs torch, transformers and safetensors (the GPU machine has them; any machine with them works).

Tolerances: both sides compute in fp32 but reduce in different orders (BLAS blocking, softmax and
layer-norm sums), which moves results by a few fp32 ulps per operation; through a few layers that
stays below 1e-5 relative for the losses and 1e-4 of each tensor's largest gradient. A wrong
formula (a missing mask, a wrong transpose) is off by 1e-2 or more.
"""
import json
import os
import re
import subprocess
import sys
import tomllib

import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertForPreTraining

from gradients import compare_gradients

bertc, config_path, work = sys.argv[1], sys.argv[2], sys.argv[3]
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
os.makedirs(work, exist_ok=True)
with open(config_path, "rb") as f:
    model_keys = tomllib.load(f)["model"]

torch.manual_seed(0)
hf_config = BertConfig(**model_keys, attn_implementation="eager")
model = BertForPreTraining(hf_config).float().to(device).eval()  # eval(): dropout off, as bertc eval
# The decoder shares the word embeddings and its bias (transformers 4.x ties them when it builds
# the model, 5.x in post_init and only while tie_word_embeddings holds): bertc's parameter list
# assumes both ties.
assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight, "decoder weight not tied"
assert model.cls.predictions.decoder.bias is model.cls.predictions.bias, "decoder bias not tied"
# Perturb the zero-initialized biases and unit norms so that every gradient path carries signal.
with torch.no_grad():
    for name, p in model.named_parameters():
        p.add_(0.02 * torch.randn_like(p))
weights = {n: p.detach().cpu().contiguous() for n, p in model.named_parameters()}  # tied decoder listed once
save_file(weights, os.path.join(work, "model.safetensors"))

batch_file = os.path.join(work, "batch.safetensors")
subprocess.run([bertc, "batch", config_path, "--index", "0", "-o", batch_file], check=True)
batch = {k: v.to(device) for k, v in load_file(batch_file).items()}

labels = torch.full_like(batch["input_ids"], -100)
rows = torch.arange(labels.shape[0], device=device).unsqueeze(1).expand_as(batch["masked_lm_positions"])
real = batch["masked_lm_weights"] > 0
labels[rows[real], batch["masked_lm_positions"][real]] = batch["masked_lm_ids"][real]
out = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
            attention_mask=batch["attention_mask"], labels=labels, next_sentence_label=batch["next_sentence_labels"])
mlm = torch.nn.functional.cross_entropy(out.prediction_logits.view(-1, hf_config.vocab_size), labels.view(-1))
nsp = torch.nn.functional.cross_entropy(out.seq_relationship_logits, batch["next_sentence_labels"])
out.loss.backward()

grads_file = os.path.join(work, "grads.safetensors")
text = subprocess.run([bertc, "eval", config_path, "--init", os.path.join(work, "model.safetensors"), "--batch",
                       batch_file, "--dump-grads", grads_file], check=True, capture_output=True, text=True).stdout
ours = {k: float(v) for k, v in re.findall(r"^(\w+) (\S+)$", text, re.M)}
theirs = {"mlm_loss": mlm.item(), "nsp_loss": nsp.item(), "loss": out.loss.item()}
failed = []
for key in theirs:
    rel = abs(ours[key] - theirs[key]) / max(abs(theirs[key]), 1e-12)
    print(f"parity {key}: bertc {ours[key]:.7f} transformers {theirs[key]:.7f} rel diff {rel:.1e}")
    if rel > 1e-5:
        failed.append(key)

our_grads = load_file(grads_file)
worst = compare_gradients(model, our_grads, failed)
print(f"parity gradients: {len(our_grads)} tensors, worst max-abs diff / tensor max = {worst:.1e}")
print(json.dumps({"losses": {"bertc": ours, "transformers": theirs}, "worst_gradient_diff": worst}))
if failed:
    print("FAIL:", ", ".join(failed))
    sys.exit(1)
print("PASS")

"""bertc export against transformers: folders written from a pretraining and a fine-tuned
checkpoint load with from_pretrained (model and tokenizer) and give bertc eval's logits on the
same batch; the exported tokenizer gives bertc's token ids.

Usage: hf_export_parity.py BERTC REPO_ROOT WORK_DIR
Needs torch, transformers and safetensors.

Tolerance: fp32 on both sides in other reduction orders: 1e-4 of the largest logit (a wrong
weight, a missing tie or a head without its pooler is off by 1e-2 or more).
"""
import os
import shutil
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertForPreTraining

bertc, root, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
inputs = os.path.join(root, "tests", "lit", "Inputs")
failed = []


def run(*args):
    return subprocess.run([bertc, *args], check=True, capture_output=True, text=True)


def compare(what, ours, theirs):
    diff = (ours - theirs).abs().max().item() / max(theirs.abs().max().item(), 1e-6)
    print(f"parity {what}: {tuple(theirs.shape)} max-abs diff / max = {diff:.1e}")
    if diff > 1e-4:
        failed.append(f"{what} ({diff:.1e})")


# A pretraining checkpoint as BertForPreTraining: MLM and NSP logits on a training batch.
config = os.path.join(inputs, "test-tiny.toml")
run("train", config, "--device", "cpu", "--steps", "2", "--checkpoint-dir", os.path.join(work, "pre"))
checkpoint = os.path.join(work, "pre", "checkpoint-000002.safetensors")
run("export", checkpoint, "-o", os.path.join(work, "hf-pre"))
batch_file = os.path.join(work, "batch.safetensors")
run("batch", config, "--index", "0", "-o", batch_file)
run("eval", config, "--init", checkpoint, "--batch", batch_file, "--dump-logits", os.path.join(work, "pre-logits.safetensors"))
ours = load_file(os.path.join(work, "pre-logits.safetensors"))
model = BertForPreTraining.from_pretrained(os.path.join(work, "hf-pre"), attn_implementation="eager").eval()
batch = load_file(batch_file)
with torch.no_grad():
    out = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"], attention_mask=batch["attention_mask"])
rows = torch.arange(batch["input_ids"].shape[0]).unsqueeze(1).expand_as(batch["masked_lm_positions"])
mlm = out.prediction_logits[rows, batch["masked_lm_positions"]].reshape(-1, out.prediction_logits.shape[-1])
compare("pretraining mlm_logits", ours["mlm_logits"], mlm)
compare("pretraining nsp_logits", ours["nsp_logits"], out.seq_relationship_logits)

# A fine-tuned checkpoint as BertForSequenceClassification, and its tokenizer on the dev sentences.
data = os.path.join(root, "examples", "data", "task")
ft = os.path.join(work, "ft")
run("finetune", os.path.join(inputs, "finetune-test.toml"), "--device", "cpu", "--epochs", "1", "--init", checkpoint,
    "--train-data", os.path.join(data, "train.tsv"), "--dev-data", os.path.join(data, "dev.tsv"), "--checkpoint-dir", ft)
best = os.path.join(ft, "best", sorted(os.listdir(os.path.join(ft, "best")))[-1])
folder = os.path.join(work, "hf-ft")
run("export", best, "-o", folder)
tokenizer = AutoTokenizer.from_pretrained(folder)
model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
sentences = [line.split("\t")[0] for line in open(os.path.join(data, "dev.tsv")).read().splitlines()[1:9]]
enc = tokenizer(sentences, padding="max_length", max_length=24, truncation=True, return_tensors="pt")
fine_batch = {"input_ids": enc["input_ids"], "token_type_ids": enc["token_type_ids"],
              "attention_mask": enc["attention_mask"], "labels": torch.zeros(8, dtype=torch.int64),
              "label_weights": torch.ones(8)}
save_file(fine_batch, os.path.join(work, "ft-batch.safetensors"))
run("eval", os.path.join(inputs, "finetune-test.toml"), "--init", best, "--batch", os.path.join(work, "ft-batch.safetensors"),
    "--dump-logits", os.path.join(work, "ft-logits.safetensors"))
with torch.no_grad():
    theirs = model(**{k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")}).logits
compare("sequence-classification logits", load_file(os.path.join(work, "ft-logits.safetensors"))["logits"], theirs)
if model.config.id2label != {0: "fits", 1: "odd"}:
    failed.append(f"id2label {model.config.id2label}")
# The exported tokenizer lower-cases and splits punctuation as bertc's does ([train] do_lower_case).
pieces = tokenizer.tokenize("Anna lives in York.")
print(f"tokenizer: {tokenizer.__class__.__name__}, vocab {tokenizer.vocab_size}: {pieces}")
if pieces != ["anna", "lives", "in", "york", "."]:
    failed.append(f"tokenizer pieces {pieces}")
if failed:
    print("FAIL:", ", ".join(failed))
    sys.exit(1)
print("PASS")

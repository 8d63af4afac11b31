"""bertc train's optimizer against PyTorch's: the same weights and batches, two optimizer steps of
`--optimizer` (adamw: torch.optim.AdamW; lion: lion-pytorch's Lion, Chen et al.'s reference
implementation), then every parameter and every optimizer state of bertc's checkpoint against
the torch optimizer's, by the names both give them (bertc declares its states with PyTorch's
names: exp_avg, exp_avg_sq).

Usage: optimizer_parity.py BERTC CONFIG.toml WORK_DIR --optimizer adamw|lion
Needs torch, transformers and safetensors, and lion-pytorch for lion (exits 77, skipped, without).

Tolerances: the gradients agree to 1e-4 of each tensor's largest (hf_eval_parity.py); the
optimizer turns them into steps of about lr per element whatever their size (Adam normalizes them,
Lion takes their sign), so an element whose gradient is rounding noise on both sides (|g| near
0) may step the other way: such an element differs by at most 2 lr a step. So a parameter
element agrees when it is within 1e-6 of torch's plus 1e-5 of the tensor's largest, at least
99.5% of each model's elements must agree, and none may differ by more than 2 lr x steps (a wrong
formula moves most elements, or by more). States are sums of gradients (exp_avg) and of their
squares (exp_avg_sq): each within 1e-3 of its tensor's largest value, or of 1e-3 of that state's
largest over the model where the tensor's are smaller (the key projection's bias has a gradient of
exactly zero, softmax ignoring a constant added to a row, so its state is rounding noise on both
sides, as hf_eval_parity's gradients are scaled).
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

STEPS = 2
bertc, config_path, work = sys.argv[1], sys.argv[2], sys.argv[3]
optimizer = sys.argv[sys.argv.index("--optimizer") + 1]
if optimizer == "lion":
    try:
        from lion_pytorch import Lion
    except ImportError:
        print("SKIP: lion-pytorch is not installed (pip install lion-pytorch)")
        sys.exit(77)
os.makedirs(work, exist_ok=True)
with open(config_path, "rb") as f:
    config = tomllib.load(f)
model_keys, train_keys = config["model"], config.get("train", {})

# The config as the run takes it: this optimizer, one micro-batch a step, the rate constant (no
# warmup or decay: each step's rate is read back from the metrics anyway), STEPS steps.
run_config = os.path.join(work, "run.toml")
with open(config_path) as f:
    text = f.read()
for key in ("optimizer", "gradient_accumulation_steps", "warmup_steps", "end_learning_rate", "steps",
            "checkpoint_every"):
    text = re.sub(rf"(?m)^{key}\s*=.*\n", "", text)
lr = float(train_keys.get("learning_rate", 1e-4))
text = text.replace("[train]\n", f'[train]\noptimizer = "{optimizer}"\ngradient_accumulation_steps = 1\n'
                                  f"warmup_steps = 0\nend_learning_rate = {lr}\nsteps = {STEPS}\n", 1)
# (relative data and vocab paths from the config's folder)
folder = os.path.dirname(os.path.abspath(config_path))
text = re.sub(r'(?m)^(data|vocab)\s*=\s*"([^/"][^"]*)"', lambda m: f'{m.group(1)} = "{os.path.join(folder, m.group(2))}"',
              text)
with open(run_config, "w") as f:
    f.write(text)

torch.manual_seed(0)
hf_config = BertConfig(**model_keys, attn_implementation="eager", hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
model = BertForPreTraining(hf_config).float()
assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight, "decoder weight not tied"
with torch.no_grad():  # every gradient path carries signal (zero biases, unit norms perturbed)
    for p in model.parameters():
        p.add_(0.02 * torch.randn_like(p))
save_file({n: p.detach().contiguous() for n, p in model.named_parameters()}, os.path.join(work, "model.safetensors"))

run_dir = os.path.join(work, "run")
subprocess.run(["rm", "-rf", run_dir], check=True)
subprocess.run([bertc, "train", run_config, "--init", os.path.join(work, "model.safetensors"), "--device", "cpu",
                "--dropout", "false", "--checkpoint-dir", run_dir], check=True)
rates = [json.loads(line)["learning_rate"] for line in open(os.path.join(run_dir, "metrics.jsonl"))
         if '"learning_rate"' in line]
assert len(rates) == STEPS, rates

# torch: the same weight-decay exemptions as bertc (biases and layer norms), the same clipping.
wd = float(train_keys.get("weight_decay", 0.01))
beta1, beta2 = float(train_keys.get("beta1", 0.9)), float(train_keys.get("beta2", 0.999))
exempt = lambda n: "bias" in n or "LayerNorm" in n
groups = [{"params": [p for n, p in model.named_parameters() if not exempt(n)], "weight_decay": wd},
          {"params": [p for n, p in model.named_parameters() if exempt(n)], "weight_decay": 0.0}]
if optimizer == "adamw":
    opt = torch.optim.AdamW(groups, lr=lr, betas=(beta1, beta2), eps=float(train_keys.get("epsilon", 1e-6)))
else:
    opt = Lion(groups, lr=lr, betas=(beta1, beta2))
max_norm = float(train_keys.get("max_grad_norm", 1.0))
model.train()  # (dropout is 0: train mode changes nothing else in BERT)
for step in range(STEPS):
    batch_file = os.path.join(work, f"batch{step}.safetensors")
    subprocess.run([bertc, "batch", run_config, "--index", str(step), "-o", batch_file], check=True,
                   capture_output=True)
    batch = load_file(batch_file)
    labels = torch.full_like(batch["input_ids"], -100)
    rows = torch.arange(labels.shape[0]).unsqueeze(1).expand_as(batch["masked_lm_positions"])
    real = batch["masked_lm_weights"] > 0
    labels[rows[real], batch["masked_lm_positions"][real]] = batch["masked_lm_ids"][real]
    out = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                attention_mask=batch["attention_mask"], labels=labels,
                next_sentence_label=batch["next_sentence_labels"])
    opt.zero_grad()
    out.loss.backward()
    if max_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    for group in opt.param_groups:
        group["lr"] = rates[step]
    opt.step()

checkpoint = load_file(os.path.join(run_dir, f"checkpoint-{STEPS:06d}.safetensors"))
failed, agree, total, worst_step = [], 0, 0, 0.0
overall = {}  # each state's largest value over the model
for p in model.parameters():
    for state, value in opt.state[p].items():
        if torch.is_tensor(value) and value.shape == p.shape:
            overall[state] = max(overall.get(state, 0.0), value.abs().max().item())
bound = 2 * lr * STEPS * 1.01  # (a flipped step each step, and float rounding of the bound)
for name, p in model.named_parameters():
    ours, theirs = checkpoint[name].float(), p.detach()
    diff = (ours - theirs).abs()
    close = diff <= 1e-6 + 1e-5 * theirs.abs().max()
    agree += int(close.sum())
    total += close.numel()
    worst_step = max(worst_step, diff.max().item())
    if diff.max().item() > bound:
        failed.append(f"{name}: differs by {diff.max().item():.2e}, more than 2 lr a step ({bound:.2e})")
    for state, value in opt.state[p].items():
        if not torch.is_tensor(value) or value.shape != p.shape:
            continue  # (torch's step count)
        key = f"{name}.{state}"
        if key not in checkpoint:
            failed.append(f"{key}: torch's {optimizer} keeps it, and bertc's checkpoint has no such state")
            continue
        scale = max(value.abs().max().item(), 1e-3 * overall[state], 1e-30)
        rel = (checkpoint[key].float() - value).abs().max().item() / scale
        if rel > 1e-3:
            failed.append(f"{key}: {rel:.1e} of its largest value")
share = agree / total
print(f"parity {optimizer}: {STEPS} steps, {share:.4%} of {total} parameter elements agree, largest difference "
      f"{worst_step:.2e} (a flipped step is {2 * lr:.1e}); states compared by torch's names")
if share < 0.995:
    failed.append(f"only {share:.2%} of the parameters agree")
our_states = {k for k in checkpoint if any(k == f"{n}.{s}" for n, p in model.named_parameters() for s in opt.state[p])}
extra = [k for k in checkpoint if re.search(r"\.(exp_avg|exp_avg_sq|momentum_buffer)$", k) and k not in our_states]
if extra:
    failed.append(f"bertc keeps states torch's {optimizer} does not: {extra[:3]}")
if failed:
    print("FAIL:", "; ".join(failed[:10]))
    sys.exit(1)
print("PASS")

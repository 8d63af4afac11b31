"""PyTorch baseline for bertc-bench-train: transformers' BertForPreTraining built from the same
[model] section, AdamW, one training step (forward, backward, optimizer) per iteration on random
batches of the same shape, timed after warm-up steps. Prints one JSON line per mode with the keys
bertc-bench-train prints (sequences_per_second, device_memory_bytes = peak allocated).

Usage: torch_baseline.py CONFIG.toml --precision bf16|fp32 --mode eager|compile [--batch-size B]
       [--seq-len S] [--steps N] [--warmup W]
bf16 runs under torch.autocast; fp32 turns TF32 off (no tensor cores: the P40 world).
Hugging Face computes the masked-LM logits at every position (bertc at the masked ones only):
that is how people train BERT with transformers, so it is the baseline as it is."""
import argparse
import json
import time
import tomllib

import torch
from transformers import BertConfig, BertForPreTraining


def tf32_off():
    """FP32 products in full precision (no TF32), on torch before and after 2.9: from 2.9 the
    fp32_precision settings replace the allow_tf32 flags, and mixing the two raises (in Inductor
    too, so torch.compile would fail). BERT has no convolutions: matmuls are what counts."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("config")
    p.add_argument("--precision", choices=["bf16", "fp32"], required=True)
    p.add_argument("--mode", choices=["eager", "compile"], required=True)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    with open(a.config, "rb") as f:
        config = tomllib.load(f)
    train = config.get("train", {})
    batch = a.batch_size or train["batch_size"]
    seq = a.seq_len or train["seq_len"]
    predictions = train.get("max_predictions_per_seq", 20)
    tf32_off()
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(**config["model"])).cuda().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    vocab = config["model"]["vocab_size"]
    input_ids = torch.randint(1, vocab, (batch, seq), device="cuda")
    token_type_ids = (torch.arange(seq, device="cuda") >= seq // 2).long().expand(batch, seq).contiguous()
    attention_mask = torch.ones(batch, seq, dtype=torch.long, device="cuda")
    labels = torch.full((batch, seq), -100, dtype=torch.long, device="cuda")
    positions = torch.randint(0, seq, (batch, predictions), device="cuda")
    labels.scatter_(1, positions, torch.randint(1, vocab, (batch, predictions), device="cuda"))
    nsp = torch.randint(0, 2, (batch,), device="cuda")

    def step(m):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            out = m(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask, labels=labels,
                    next_sentence_label=nsp)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return out.loss

    run = torch.compile(model) if a.mode == "compile" else model
    started = time.perf_counter()
    for _ in range(a.warmup):
        step(run)
    torch.cuda.synchronize()
    setup = time.perf_counter() - started
    torch.cuda.reset_peak_memory_stats()
    timed = time.perf_counter()
    for _ in range(a.steps):
        loss = step(run)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - timed
    print(json.dumps({
        "impl": f"torch-{a.mode}", "config": config.get("name", a.config), "device": torch.cuda.get_device_name(),
        "precision": a.precision, "batch_size": batch, "seq_len": seq, "steps": a.steps, "seconds": seconds,
        "setup_seconds": setup, "sequences_per_second": a.steps * batch / seconds,
        "tokens_per_second": a.steps * batch * seq / seconds,
        "device_memory_bytes": torch.cuda.max_memory_allocated(), "last_loss": float(loss),
        "torch": torch.__version__}))


if __name__ == "__main__":
    main()

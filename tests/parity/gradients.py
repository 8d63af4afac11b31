"""The gradient comparison the parity scripts share: every parameter's gradient from bertc against
torch's, each tensor's max-abs difference over its own largest value, but never over less than
1e-3 of the model's largest gradient (a gradient that is truly 0, such as the key bias's, holds
only rounding noise on both sides). Tolerance 1e-4: fp32 in other reduction orders stays below it
by orders of magnitude; a wrong formula is off by 1e-2 or more."""
import torch


def compare_gradients(model, ours, failed):
    """Appends "name (diff)" to `failed` for each parameter beyond tolerance or missing from
    `ours` (name -> tensor); returns the worst relative difference."""
    overall = max(p.grad.abs().max().item() for p in model.parameters() if p.grad is not None)
    worst = 0.0
    for name, p in model.named_parameters():
        ref = p.grad.detach().cpu() if p.grad is not None else torch.zeros_like(p.detach().cpu())
        if name not in ours:
            failed.append(f"{name} (no bertc gradient)")
            continue
        scale = max(ref.abs().max().item(), 1e-3 * overall)
        diff = (ours[name] - ref).abs().max().item() / scale
        worst = max(worst, diff)
        if diff > 1e-4:
            failed.append(f"{name} ({diff:.1e})")
    return worst

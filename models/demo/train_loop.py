"""The training loop the demo classifiers share (train_classifier.py,
train_defect_classifier.py): AdamW with a one-cycle schedule, random
horizontal and vertical mirroring (physically plausible on a conveyor: belt
direction, part side), label smoothing 0.05, seeded so a rerun gives the
same weights."""
import torch
import torch.nn.functional as F


def train(model, x, y, epochs, batch, normalise, lr=3e-3):
    """x: uint8 NCHW images, y: class indices; normalise maps a uint8 batch
    to the model's input; lr: the one-cycle schedule's peak."""
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    steps = epochs * (len(x) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=gen)
        total, correct, loss_sum = 0, 0, 0.0
        for i in range(0, len(x) - batch + 1, batch):
            idx = order[i:i + batch]
            xb, yb = x[idx], y[idx]
            flip = torch.rand(2, generator=gen)
            if flip[0] < 0.5:
                xb = xb.flip(3)
            if flip[1] < 0.5:
                xb = xb.flip(2)
            out = model(normalise(xb))
            loss = F.cross_entropy(out, yb, label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * len(yb)
            correct += (out.argmax(1) == yb).sum().item()
            total += len(yb)
        print(f"epoch {epoch + 1:2d}/{epochs}  loss {loss_sum / total:.3f}  "
              f"train-batch acc {correct / total:.3f}", flush=True)

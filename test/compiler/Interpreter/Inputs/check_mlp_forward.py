"""Checks run.test's forward results (written as .npy files) against numpy."""
import sys

import numpy as np

out = sys.argv[1]
p = np.load(f"{out}/params.npz")
x = np.load(f"{out}/image.npy").astype(np.float64)
y = np.load(f"{out}/labels.npy")
h = np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0)
logits = h @ p["fc2.weight"].T + p["fc2.bias"]
shifted = logits - logits.max(axis=1, keepdims=True)
logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
loss = -logp[np.arange(len(y)), y].mean()
accuracy = (logits.argmax(axis=1) == y).mean()
got_loss = np.load(f"{out}/forward/loss.npy")
got_accuracy = np.load(f"{out}/forward/accuracy.npy")
assert got_loss.dtype == np.float32 and got_loss.shape == (), got_loss
assert abs(float(got_loss) - loss) <= 1e-5 * abs(loss), (got_loss, loss)
assert float(got_accuracy) == accuracy, (got_accuracy, accuracy)
print("forward matches numpy: loss", float(got_loss), "accuracy", accuracy)

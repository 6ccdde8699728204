"""The workloads of bench/peers.py: what each .pbtxt in examples/ trains.

Plain Python (no third-party imports): read by the driver under
/usr/bin/python3 and by the peer workers inside bench/.venv. Every number
here restates the .pbtxt file named by `pbtxt`; when one changes, change
the other (the driver checks the parameter counts against
`sinterc --summary`, which catches shape drift but not optimizer drift).

A workload is a dict:
  pbtxt, batch          the model file and the --batch-size it is run at
  pbtxt_replace         optional [(old, new), ...]: the driver compiles a
                        copy of `pbtxt` (in its temporary folder) with every
                        `old` replaced by `new` (each `old` must occur in
                        the file)
  inputs                name -> (shape, dtype, exclusive upper bound for
                        random ints / None for standard-normal floats)
  steps_scale           timed steps per repeat = max(1, --steps * scale)
  warmup                untimed peer steps before timing (after compiling)
  default               measured unless --only names it
  model                 the architecture (kind "mlp" or "gpt")
  optim                 optimizer, schedule and clipping
"""

MLP = {
    "pbtxt": "examples/mlp_classifier.pbtxt",
    "batch": 64,
    "inputs": {"image": ([64, 784], "f32", None),
               "label": ([64], "i64", 10)},
    "steps_scale": 20,
    "warmup": 20,
    "default": True,
    # 784 -> 256 relu -> 10, nn.Linear layout ([out, in] weights + bias);
    # softmax cross-entropy plus the `accuracy` metric.
    "model": {"kind": "mlp", "n_in": 784, "n_hidden": 256, "n_out": 10},
    # torch.optim.SGD(lr=0.05, momentum=0.9); no schedule, no clipping.
    "optim": {"kind": "sgd", "lr": 0.05, "momentum": 0.9},
}

CHARGPT = {
    "pbtxt": "examples/chargpt.pbtxt",
    "batch": 8,
    "inputs": {"idx": ([8, 256], "i64", 65),
               "targets": ([8, 256], "i64", 65)},
    "steps_scale": 1,
    "warmup": 3,
    "default": True,
    # nanoGPT shakespeare_char: bias=True, lm_head tied to wte, exact GELU,
    # dropout 0.2 (embedding, attention probabilities, attention output,
    # MLP output), LayerNorm eps 1e-5; loss ignore_index=-1.
    "model": {"kind": "gpt", "vocab": 65, "block_size": 256, "n_layer": 6,
              "n_head": 6, "n_embd": 384, "dropout": 0.2, "bias": True,
              "gelu_tanh": False},
    # AdamW with weight decay on parameters of rank >= 2 only, global-norm
    # clipping, nanoGPT's warmup-cosine get_lr.
    "optim": {"kind": "adamw", "lr": 1e-3, "betas": (0.9, 0.99), "eps": 1e-8,
              "weight_decay": 0.1, "grad_clip": 1.0, "warmup_steps": 100,
              "decay_steps": 5000, "min_lr": 1e-4},
}

# chargpt without dropout: the same file with every dropout rate set to 0
# (the embedding's dropout layer and the blocks' dropout), the same model
# with dropout 0.0 for the peers. PyTorch then takes the fused
# scaled_dot_product_attention (flash) path instead of the math fallback.
CHARGPT_NODROP = dict(
    CHARGPT,
    pbtxt_replace=[("dropout { rate: 0.2 }", "dropout { rate: 0 }"),
                   ("dropout: 0.2", "dropout: 0")],
    model=dict(CHARGPT["model"], dropout=0.0),
)

GPT2 = {
    "pbtxt": "examples/gpt2_124m.pbtxt",
    "batch": 1,
    "inputs": {"idx": ([1, 1024], "i64", 50257),
               "targets": ([1, 1024], "i64", 50257)},
    "steps_scale": 0.3,
    "warmup": 2,
    "default": False,  # ~4 s a step for Sinter alone
    # GPT-2 small: no dropout, tanh GELU. The file's grad_accumulation_steps
    # does not apply here: the bench times raw `--inputs` steps of the
    # train_step program (the binary's raw-step mode runs the step program
    # once per step), so one step is one micro-batch, for Sinter and peers.
    "model": {"kind": "gpt", "vocab": 50257, "block_size": 1024, "n_layer": 12,
              "n_head": 12, "n_embd": 768, "dropout": 0.0, "bias": True,
              "gelu_tanh": True},
    "optim": {"kind": "adamw", "lr": 6e-4, "betas": (0.9, 0.95), "eps": 1e-8,
              "weight_decay": 0.1, "grad_clip": 1.0, "warmup_steps": 2000,
              "decay_steps": 600000, "min_lr": 6e-5},
}

CNN = {
    "pbtxt": "examples/cnn_classifier.pbtxt",
    "batch": 64,
    "inputs": {"image": ([64, 784], "f32", None),
               "label": ([64], "i64", 10)},
    "steps_scale": 10,
    "warmup": 20,
    "default": True,
    # image -> (1, 28, 28) -> conv 3x3 pad 1 (16) -> relu -> maxpool 2 ->
    # conv 3x3 pad 1 (32) -> relu -> maxpool 2 -> flatten (1568) ->
    # linear 128 -> relu -> linear 10; nn.Conv2d / nn.Linear layouts and
    # default initializers; softmax cross-entropy plus `accuracy`.
    "model": {"kind": "cnn", "image": 28, "channels": [1, 16, 32],
              "kernel": 3, "n_hidden": 128, "n_out": 10},
    "optim": {"kind": "sgd", "lr": 0.05, "momentum": 0.9},
}

# The CNN with its second convolution depthwise-separable (MobileNet's
# block): a 3x3 depthwise convolution (groups 16), then a 1x1 one.
CNN_SEPARABLE = dict(
    CNN,
    pbtxt_replace=[(
        'layer { name: "conv2" input: "pool1" conv2d { out_channels: 32 '
        'kernel_size: 3 padding: 1 } }',
        'layer { name: "conv2_dw" input: "pool1" conv2d { out_channels: 16 '
        'kernel_size: 3 padding: 1 groups: 16 } }\n'
        'layer { name: "conv2" input: "conv2_dw" conv2d { out_channels: 32 '
        'kernel_size: 1 } }')],
    default=False,
    model=dict(CNN["model"], separable=True),
)

# The CNN with a batch norm after each convolution (whose bias it makes
# useless, so the convolutions have none): nn.BatchNorm2d in training mode,
# its running statistics updated every step.
CNN_BN = dict(
    CNN,
    pbtxt_replace=[
        ('layer { name: "conv1" input: "pixels" conv2d { out_channels: 16 '
         'kernel_size: 3 padding: 1 } }\n'
         'layer { name: "act1" input: "conv1"',
         'layer { name: "conv1" input: "pixels" conv2d { out_channels: 16 '
         'kernel_size: 3 padding: 1 bias: false } }\n'
         'layer { name: "bn1" input: "conv1" batch_norm {} }\n'
         'layer { name: "act1" input: "bn1"'),
        ('layer { name: "conv2" input: "pool1" conv2d { out_channels: 32 '
         'kernel_size: 3 padding: 1 } }\n'
         'layer { name: "act2" input: "conv2"',
         'layer { name: "conv2" input: "pool1" conv2d { out_channels: 32 '
         'kernel_size: 3 padding: 1 bias: false } }\n'
         'layer { name: "bn2" input: "conv2" batch_norm {} }\n'
         'layer { name: "act2" input: "bn2"')],
    default=False,
    model=dict(CNN["model"], batch_norm=True),
)

WORKLOADS = {"mlp": MLP, "cnn": CNN, "cnn-separable": CNN_SEPARABLE,
             "cnn-bn": CNN_BN,
             "chargpt": CHARGPT,
             "chargpt-nodrop": CHARGPT_NODROP, "gpt2": GPT2}


def get_lr(optim, step):
    """nanoGPT's get_lr at 0-based `step` (docs/ModelFormat.md)."""
    import math
    lr, warmup = optim["lr"], optim.get("warmup_steps", 0)
    if "decay_steps" not in optim:
        return lr * (step + 1) / (warmup + 1) if step < warmup else lr
    if step < warmup:
        return lr * (step + 1) / (warmup + 1)
    decay, min_lr = optim["decay_steps"], optim["min_lr"]
    if step > decay:
        return min_lr
    ratio = (step - warmup) / (decay - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def model_flops(workload, params):
    """Model FLOPs of one training step (forward + backward).

    MLP: 6 * params * batch (2 for the forward multiply-adds, 4 for the
    backward's two gradients). CNN: the same 3 x 2 multiply-adds of each
    layer, a convolution's at every output position. GPT: nanoGPT's estimate_mfu,
    6 N + 12 L H Q T per token with N all parameters (tied ones once),
    H heads, Q = C / H and T the sequence length.
    """
    m, batch = workload["model"], workload["batch"]
    if m["kind"] == "mlp":
        return 6.0 * params * batch
    if m["kind"] == "cnn":
        side, k, macs = m["image"], m["kernel"], 0
        chans = m["channels"]
        for n, (c_in, c_out) in enumerate(zip(chans, chans[1:])):
            if n == 1 and m.get("separable"):  # depthwise k x k, then 1 x 1
                macs += side * side * c_in * (k * k + c_out)
            else:
                macs += side * side * c_out * c_in * k * k  # padding keeps it
            side //= 2  # 2x2 max pooling
        flat = chans[-1] * side * side
        macs += flat * m["n_hidden"] + m["n_hidden"] * m["n_out"]
        return 6.0 * macs * batch
    seq = workload["inputs"]["idx"][0][1]
    L, H, C = m["n_layer"], m["n_head"], m["n_embd"]
    per_token = 6.0 * params + 12.0 * L * H * (C // H) * seq
    return per_token * batch * seq

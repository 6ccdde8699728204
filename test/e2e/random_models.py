#!/usr/bin/env python3
"""Random small models, compiled and checked against the interpreter.

    random_models.py generate --count=N --seed=S --out-dir=DIR
    random_models.py check --count=N --seed=S --work-dir=DIR [--sinterc=PATH]
                     [--entries=train_step,forward_grad] [--only=I]
                     [--shapes=plain|edge]
                     [--target=cpu|cuda-host|cuda-fake --fake-cuda=LIB]
                     [--precision=fp32|bf16_mixed|fp16_mixed]

`generate` writes DIR/rand-<seed>-<i>.pbtxt (docs/ModelFormat.md), each a
seeded function of (seed, i): GPTs for even i, MLPs for odd i.

  * MLP: 1-3 dense layers of random widths with random activations, optional
    layer norm, bias and dropout; a classifier (softmax_cross_entropy and an
    accuracy metric) or a regression (mean_squared_error).
  * GPT: 1-2 transformer blocks, 1-3 heads, width a multiple of the heads,
    T 4-16, vocab 5-40, dropout 0 or 0.1, GELU or GELU_TANH, tied or untied
    head, with or without biases, MLP hidden 4C or 2C.
  * training: the optimizer cycles every two models through sgd, momentum
    (nesterov or not, dampening), adam and adamw, so any 8 consecutive
    models cover each with both model kinds; weight decay (and which
    parameters it applies to), schedule, clipping and batch size (1-4) are
    drawn.

With --shapes=edge the sizes are drawn instead where code generation
splits, and where the plain draws never go: a context or a batch of 1 (a
sum over a batch of 1 keeps its operand's shape), one head and heads of
width 1, widths off every vector, warp and block multiple (3, 40, 257),
vocabularies and classes of 257 and 2053 (rows longer than a CUDA block's
slots, --cuda-row-slots), positional tables longer than the context (their
gradient is padded), batches up to 5. A CUDA-kernel bug that kept char-GPT's
positional-embedding gradient wrong at batch 1 only is the kind this finds.
--target=cuda-host runs the CUDA target's kernels on the host, with
oneDNN's matmuls (so without cuBLASLt's GELU training forms);
--target=cuda-fake runs the --target=cuda binary itself on the stand-in
driver, cuBLASLt and NCCL (--fake-cuda, libsinter_fake_cuda.so;
test/e2e/cuda-fake-numbers.test says what it computes), each model's
kernels from its own cuda-host build: every epilogue the CUDA target has,
the GELU forms under bf16 included. --precision compiles and interprets
every model at that precision (compare_compiled.py's tolerances with
--flip-band).

Each file's header comment says what was drawn and what the check runs.

`check` generates the same models and runs compare_compiled.py on each for
every entry (train_step at a random step 0-199 with random optimizer state;
forward_grad at step 0), prints one line per run and, for each failure, the
command that reproduces it. Exit status 1 when any run fails. The
tolerances are compare_compiled.py's, never loosened here: a failure is a
compiler (or interpreter) bug.
"""

import argparse
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def optimizer_text(r, i):
    # Cycled rather than drawn, so that any 8 consecutive models cover each
    # optimizer with both model kinds.
    kind = ["sgd", "momentum", "adam", "adamw"][(i // 2) % 4]
    wd = r.choice([0.0, 0.0, 0.01, 0.1])
    if kind == "sgd":
        lr = r.choice([0.01, 0.05, 0.1])
        opt = f"sgd {{ lr: {lr} weight_decay: {wd} }}"
    elif kind == "momentum":
        lr = r.choice([0.01, 0.05])
        nest = r.random() < 0.5
        damp = 0.0 if nest else r.choice([0.0, 0.1])
        opt = (f"sgd {{ lr: {lr} momentum: 0.9 dampening: {damp} nesterov: "
               f"{'true' if nest else 'false'} weight_decay: {wd} }}")
    else:
        lr = r.choice([1e-3, 3e-3, 1e-2])
        b2 = r.choice([0.99, 0.999])
        opt = f"{kind} {{ lr: {lr} beta1: 0.9 beta2: {b2} weight_decay: {wd} }}"
    which = r.choice(["ALL", "MATRICES"])
    lines = [f"  optimizer {{\n    {opt}\n    weight_decay_params: {which}\n  }}"]
    sched = r.choice(["none", "constant", "cosine"])
    if sched == "constant":
        lines.append(f"  lr_schedule {{ constant {{ warmup_steps: "
                     f"{r.choice([0, 10, 100])} }} }}")
    elif sched == "cosine":
        w = r.choice([0, 10, 50])
        d = r.choice([100, 150, 1000])
        lines.append(f"  lr_schedule {{ warmup_cosine {{ warmup_steps: {w} "
                     f"decay_steps: {d} min_lr: 1e-4 }} }}")
    clip = r.choice([0.0, 0.0, 0.5, 1.0])
    if clip:
        lines.append(f"  grad_clip: {clip}")
    return kind, "\n".join(lines)


def mlp_model(r, name, edge):
    din = r.choice([1, 3, 40, 257]) if edge else r.randint(1, 24)
    depth = r.randint(1, 3)
    acts = ["RELU", "TANH", "SIGMOID", "GELU", "GELU_TANH"]
    classify = r.random() < 0.6
    if edge:
        out = r.choice([2, 3, 257, 2053]) if classify else r.choice([1, 3, 40])
    else:
        out = r.randint(2, 10) if classify else r.randint(1, 6)
    layers, prev, desc = [], "x", []
    for i in range(depth):
        last = i == depth - 1
        units = out if last else (r.choice([1, 7, 33, 300]) if edge
                                  else r.randint(1, 32))
        bias = r.random() < 0.8
        layers.append(f'layer {{ name: "fc{i}" input: "{prev}" dense {{ units: '
                      f'{units} bias: {"true" if bias else "false"} }} }}')
        prev = f"fc{i}"
        desc.append(f"dense {units}{'' if bias else ' nobias'}")
        if last:
            break
        if r.random() < 0.3:
            layers.append(f'layer {{ name: "ln{i}" input: "{prev}" '
                          f'layer_norm {{}} }}')
            prev = f"ln{i}"
            desc.append("layer_norm")
        act = r.choice(acts)
        layers.append(f'layer {{ name: "act{i}" input: "{prev}" activation '
                      f'{{ kind: {act} }} }}')
        prev = f"act{i}"
        desc.append(act.lower())
        if r.random() < 0.3:
            layers.append(f'layer {{ name: "drop{i}" input: "{prev}" dropout '
                          f'{{ rate: 0.1 }} }}')
            prev = f"drop{i}"
            desc.append("dropout")
    inputs = [f'input {{ name: "x" shape: [-1, {din}] dtype: FLOAT32 }}']
    if classify:
        inputs.append('input { name: "label" shape: [-1] dtype: INT64 }')
        loss = (f'loss {{ softmax_cross_entropy {{ logits: "{prev}" labels: '
                f'"label" }} }}\nmetric {{ name: "accuracy" accuracy {{ '
                f'logits: "{prev}" labels: "label" }} }}')
    else:
        inputs.append(f'input {{ name: "y" shape: [-1, {out}] dtype: '
                      f'FLOAT32 }}')
        loss = (f'loss {{ mean_squared_error {{ prediction: "{prev}" '
                f'target: "y" }} }}')
    what = (f"MLP in {din}: {', '.join(desc)}; "
            f"{'softmax_cross_entropy' if classify else 'mean_squared_error'}")
    return what, "\n".join(inputs + layers + [loss])


def gpt_model(r, name, edge):
    n_layer = r.randint(1, 2)
    if edge:
        heads = r.choice([1, 1, 2, 4])
        width = heads * r.choice([1, 3, 8, 10])
        T = r.choice([1, 2, 3, 8, 17, 33])
        vocab = r.choice([2, 3, 11, 257, 2053])
        positions = T + r.choice([0, 1, 7])
    else:
        heads = r.randint(1, 3)
        width = heads * r.choice([2, 4, 6, 8])
        T = r.randint(4, 16)
        vocab = r.randint(5, 40)
        positions = T
    drop = r.choice([0.0, 0.1])
    act = r.choice(["GELU", "GELU_TANH"])
    tied = r.random() < 0.5
    bias = r.random() < 0.8
    hidden = r.choice([0, 2 * width])
    block = (f"transformer_block {{ num_heads: {heads} dropout: {drop} "
             f"activation: {act} bias: {'true' if bias else 'false'}"
             + (f" mlp_hidden: {hidden}" if hidden else "") + " }")
    head = (f'dense {{ units: {vocab} bias: false tie_weight: '
            f'"transformer.wte.weight" }}' if tied
            else f"dense {{ units: {vocab} bias: false }}")
    text = f"""input {{ name: "idx" shape: [-1, {T}] dtype: INT64 }}
input {{ name: "targets" shape: [-1, {T}] dtype: INT64 }}
layer {{ name: "transformer.wte" input: "idx"
        embedding {{ num_embeddings: {vocab} dim: {width} init {{ normal_std: 0.02 }} }} }}
layer {{ name: "transformer.wpe" input: "idx"
        positional_embedding {{ max_positions: {positions} dim: {width} init {{ normal_std: 0.02 }} }} }}
layer {{ name: "embed" input: ["transformer.wte", "transformer.wpe"] add {{}} }}
layer {{ name: "transformer.drop" input: "embed" dropout {{ rate: {drop} }} }}
layer {{ name: "transformer.h" input: "transformer.drop" repeat: {n_layer}
        {block} }}
layer {{ name: "transformer.ln_f" input: "transformer.h" layer_norm {{}} }}
layer {{ name: "lm_head" input: "transformer.ln_f" {head} }}
loss {{ softmax_cross_entropy {{ logits: "lm_head" labels: "targets" ignore_index: -1 }} }}"""
    what = (f"GPT {n_layer} layer(s), {heads} head(s), C={width}, T={T}, "
            + (f"{positions} positions, " if positions != T else "") +
            f"vocab {vocab}, dropout {drop}, {act.lower()}, "
            f"{'tied' if tied else 'untied'} head, "
            f"{'bias' if bias else 'no bias'}, mlp_hidden "
            f"{hidden or '4C'}")
    return what, text


def make_model(seed, i, edge=False):
    """(file name, text, batch, step) for model i of `seed`."""
    r = random.Random(f"{seed}-{i}" + ("-edge" if edge else ""))
    name = f"rand-{seed}-{i}" + ("-edge" if edge else "")
    what, body = (gpt_model if i % 2 == 0 else mlp_model)(r, name, edge)
    kind, training = optimizer_text(r, i)
    batch = r.choice([1, 1, 2, 3, 5]) if edge else r.randint(1, 4)
    step = r.randint(0, 199)
    text = (f"# random_models.py seed {seed} model {i}: {what}; {kind}, "
            f"batch {batch}.\n# check: train_step at step {step} (random "
            f"optimizer state), forward_grad at step 0.\n"
            f'name: "{name.replace("-", "_")}"\n{body}\n'
            f"training {{\n  batch_size: {batch}\n  seed: {1000 + i}\n"
            f"{training}\n}}\n")
    return name + ".pbtxt", text, batch, step


def host_kernels(args, path, entry, batch, work):
    """--target=cuda-fake: the kernels' host versions as a shared library,
    built with the same flags as the CUDA binary, so that they are the same
    kernels. (library, "") or (None, the command that failed)."""
    os.makedirs(work, exist_ok=True)
    obj = os.path.join(work, "kernels.o")
    lib = os.path.join(work, "kernels.so")
    build = [args.sinterc, path, "--target=cuda-host", f"--entry={entry}",
             f"--batch-size={batch}",
             *([f"--precision={args.precision}"]
               if args.precision != "fp32" else []), "-o", obj]
    for cmd in (build, ["cc", "-shared", obj, "-o", lib]):
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            print("  " + p.stdout.strip().replace("\n", "\n  "))
            return None, " ".join(cmd)
    return lib, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["generate", "check"])
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir")
    ap.add_argument("--work-dir")
    ap.add_argument("--sinterc", default="sinterc")
    ap.add_argument("--entries", default="train_step,forward_grad")
    ap.add_argument("--only", type=int, help="just model I")
    ap.add_argument("--shapes", choices=["plain", "edge"], default="plain")
    ap.add_argument("--target", default="cpu",
                    choices=["cpu", "cuda-host", "cuda-fake"],
                    help="compare_compiled.py's --target (cpu, cuda-host), "
                         "or cuda-fake: --target=cuda on the stand-in")
    ap.add_argument("--fake-cuda",
                    help="with --target=cuda-fake: the stand-in library "
                         "(build/lib/libsinter_fake_cuda.so)")
    ap.add_argument("--precision", default="fp32",
                    choices=["fp32", "bf16_mixed", "fp16_mixed"])
    args = ap.parse_args()
    out = args.out_dir or args.work_dir
    if not out:
        sys.exit("error: --out-dir (generate) or --work-dir (check) needed")
    os.makedirs(out, exist_ok=True)
    if args.target == "cuda-fake":
        if not args.fake_cuda or not os.path.isfile(args.fake_cuda):
            sys.exit(f"error: --target=cuda-fake needs --fake-cuda=LIB, the "
                     f"stand-in library (got {args.fake_cuda!r})")
        # The stand-in answers for cuBLASLt and NCCL too, by their names.
        libs = os.path.join(out, "fake-libs")
        os.makedirs(libs, exist_ok=True)
        for name in ("libcublasLt.so.13", "libnccl.so.2"):
            link = os.path.join(libs, name)
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(args.fake_cuda), link)

    which = [args.only] if args.only is not None else range(args.count)
    models = []
    for i in which:
        fname, text, batch, step = make_model(args.seed, i,
                                              args.shapes == "edge")
        path = os.path.join(out, fname)
        with open(path, "w") as f:
            f.write(text)
        models.append((i, path, batch, step, text.splitlines()[0]))
    if args.mode == "generate":
        for i, path, batch, step, head in models:
            print(f"{path}: {head[2:]}")
        return

    failures = []
    for i, path, batch, step, head in models:
        print(head)
        for entry in args.entries.split(","):
            opts = [f"--entry={entry}", f"--batch-size={batch}", "--seed=7"]
            if entry == "train_step":
                opts += [f"--step={step}", "--state=random"]
            if args.precision != "fp32":
                # A half rounding that lands on the other side of a tie in
                # the binary and the interpreter is not a bug: the flip band.
                opts += [f"--precision={args.precision}", "--flip-band"]
            if args.target == "cuda-host":
                # Its matmuls are oneDNN's, which has no GELU training
                # forms (an AUX output, DGELU): those are cuBLASLt's, checked
                # by cuda-fake-numbers.test and the GPU check.
                opts.append("--sinterc-flag=--matmul-epilogues="
                            "scale,bias,relu,gelu_tanh")
            work = os.path.join(out, f"w{i}-{entry}")
            target, env, prefix = args.target, None, ""
            if args.target == "cuda-fake":
                lib, failed = host_kernels(args, path, entry, batch, work)
                if failed:
                    failures.append(failed)
                    continue
                target = "cuda"
                env = dict(os.environ, SINTER_LIBCUDA=args.fake_cuda,
                           SINTER_CUDA_LIBS=libs,
                           SINTER_FAKE_CUDA_KERNELS=lib)
                prefix = (f"SINTER_LIBCUDA={args.fake_cuda} "
                          f"SINTER_CUDA_LIBS={libs} "
                          f"SINTER_FAKE_CUDA_KERNELS={lib} ")
            cmd = [sys.executable, os.path.join(HERE, "compare_compiled.py"),
                   path, f"--sinterc={args.sinterc}",
                   f"--target={target}", *opts, f"--work-dir={work}"]
            p = subprocess.run(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
            lines = p.stdout.splitlines()
            if p.returncode == 0:
                for ln in lines:
                    if ln.startswith("== ") or "worst" in ln:
                        print("  " + ln)
            else:
                print("\n".join("  " + ln for ln in lines))
                failures.append(prefix + " ".join(cmd))
    if failures:
        print(f"FAIL: {len(failures)} run(s); reproduce with:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    print(f"ALL PASS: {len(models)} models")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The CUDA target's check on a machine with one NVIDIA GPU (docs/Cuda.md).
#
#   scripts/gpu-check.sh prepare [DIR]   here, with the build: compiles the
#                                         CUDA binaries, computes the
#                                         references, bundles what the GPU
#                                         machine lacks into DIR
#   scripts/gpu-check.sh run [DIR]       there: runs the checks, prints
#                                         everything needed to debug a
#                                         failure, exits 1 if one fails
#
# `run` takes GPU_CHECK_BUDGET seconds at most (default 480: each step's
# limit shrinks to what is left) and runs the steps in GPU_CHECK_STEPS
# (default "1 2 3 4 5 peer"), in the order 5 1 2 4 3 peer: quick and telling
# first, the PyTorch peer (torch.compile's compile time) last.
#
# DIR defaults to .gpu-check (git-ignored; carry it to the GPU machine, e.g.
# the device tool's `carry: [".gpu-check"]`). The GPU machine has the driver,
# PyTorch (and with it cuBLASLt and NCCL as Python wheels) and numpy, but no
# MLIR, no Debian packages and no network, so everything sinterc computes
# happens in `prepare`:
#
#   1. numbers: small models compiled for --target=cuda (sm_90), their
#      inputs and the reference interpreter's outputs (and an f64 arbiter)
#      made by test/e2e/compare_compiled.py --prepare; `run` replays each
#      binary and holds every result (loss, every gradient, updated
#      parameters and optimizer state) to compare_compiled.py's tolerances;
#      then traces one step of the tiny GPT (f32, bf16), one launch a
#      kernel, into $OUT/traces.tar (`--trace`): `sinterc --bisect` here
#      holds each kernel and matmul the GPU ran against the interpreter,
#      from the GPU's own inputs to it (docs/Testing.md);
#   2. training: char-GPT for 200 steps (batch 4) on the CPU target here,
#      the CUDA binary there, loss curves compared by loss_curves.py; then
#      50 steps of the same model built with --cuda-merge-launches=false,
#      timed;
#   3. speed: GPT-2 124M, bf16 mixed precision, batch 16 x 1024 (one
#      optimizer step a batch, no accumulation), Sinter's
#      raw steps against PyTorch's torch.compile + autocast on the same GPU
#      (scripts/gpu/torch_gpt2.py); then the same steps enqueued one by
#      one with --profile, every kernel and matmul timed by events; then
#      the same model built with --cuda-row-slots=0, with
#      --cuda-merge-launches=false and with --causal-matmuls=false, both
#      ways each, and each profile side by side with the default build's by
#      kernel kind
#      (scripts/gpu/compare_profiles.py);
#   4. a checked run: char-GPT at a learning rate that diverges must stop
#      with the op where the values went non-finite, found by re-running
#      the steps with --check-numerics's scans on the GPU;
#   5. facts, not a check: where cuBLASLt's tanh-GELU training epilogues
#      round in f32 and bf16 (scripts/gpu/cublaslt_gelu_forms.cpp, built
#      here), what a bf16 version of the CUDA target's GELU_AUX_BIAS /
#      DGELU_BGRAD fusion must match.
#
# The binaries' Debian libraries (oneDNN, Abseil, protobuf, Gloo, ...) go in
# DIR/lib.txz and are put on LD_LIBRARY_PATH for Sinter's binaries only;
# cuBLASLt is the image's own (SINTER_CUDA_LIBS, found through its wheel).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}
dir=${2:-$root/.gpu-check}
python=${PYTHON:-python3}

die() { echo "gpu-check: $*" >&2; exit 2; }

prepare() {
  local sinterc=$root/build/bin/sinterc
  [ -x "$sinterc" ] || die "no $sinterc: build first (scripts/build.sh)"
  [ -x /usr/bin/python3 ] && python=/usr/bin/python3
  export PATH=$root/build/bin:$PATH
  rm -rf "$dir" && mkdir -p "$dir/cases" || die "cannot create $dir"
  local t0=$SECONDS
  # A small char-GPT (2 layers, 128 wide, 4 heads) whose references fit in
  # what travels.
  sed -e 's/repeat: 6/repeat: 2/' -e 's/dim: 384/dim: 128/g' \
      -e 's/num_heads: 6/num_heads: 4/' "$root/examples/chargpt.pbtxt" \
      > "$dir/chargpt-small.pbtxt"
  local tiny=$root/test/passes/Inputs/tiny_gpt.pbtxt
  local mlp=$root/examples/mlp_classifier.pbtxt
  export ROOT_E2E=$root/test/e2e
  # The tiny GPT with the tanh GELU: its linear layers take cuBLASLt's
  # training forms (GELU_AUX_BIAS, DGELU_BGRAD), whose bias gradient only a
  # real cuBLASLt can confirm.
  sed 's/num_heads: 2 dropout: 0.2 }/num_heads: 2 dropout: 0.2 activation: GELU_TANH }/' \
      "$tiny" > "$dir/tiny-tanh.pbtxt"
  # One char-GPT layer whose attention rows (640) are longer than a
  # block's 256 threads: the row kernels' slots (--cuda-row-slots), three a
  # thread with the last one part past the row, on a real GPU's threads,
  # which the host's one-thread emulation cannot show.
  sed -e 's/repeat: 6/repeat: 1/' -e 's/dim: 384/dim: 128/g' \
      -e 's/num_heads: 6/num_heads: 4/' -e 's/\[-1, 256\]/[-1, 640]/g' \
      -e 's/max_positions: 256/max_positions: 640/' "$root/examples/chargpt.pbtxt" \
      > "$dir/chargpt-long.pbtxt"
  local cases=(
    "mlp-step|$mlp --batch-size=8 --entry=train_step --params=init"
    "mlp-grad|$mlp --batch-size=8 --entry=forward_grad"
    "tiny-step150|$tiny --entry=train_step --step=150 --state=random --seed=1"
    "tiny-grad|$tiny --entry=forward_grad --seed=2"
    "tiny-bf16-step150|$tiny --precision=bf16_mixed --entry=train_step --step=150 --state=random --seed=1"
    "tiny-tanh-grad|$dir/tiny-tanh.pbtxt --entry=forward_grad --seed=4"
    "tiny-tanh-step150|$dir/tiny-tanh.pbtxt --entry=train_step --step=150 --state=random --seed=1"
    "tiny-tanh-aux-grad|$dir/tiny-tanh.pbtxt --entry=forward_grad --seed=4 --sinterc-flag=--matmul-epilogues=bias,gelu_tanh,gelu_aux"
    # The same forms under bf16 (GELU_AUX_BIAS and DGELU with bf16 out and
    # aux, where the H200's cuBLASLt was measured to round): the flip band,
    # as its tanh is not ours to the last bit.
    "tiny-tanh-bf16-grad|$dir/tiny-tanh.pbtxt --precision=bf16_mixed --flip-band --entry=forward_grad --seed=4"
    "tiny-tanh-bf16-step150|$dir/tiny-tanh.pbtxt --precision=bf16_mixed --flip-band --entry=train_step --step=150 --state=random --seed=1"
    "chargpt-small-grad|$dir/chargpt-small.pbtxt --batch-size=4 --entry=forward_grad"
    "chargpt-small-step50|$dir/chargpt-small.pbtxt --batch-size=4 --entry=train_step --step=50 --params=init"
    "chargpt-long-grad|$dir/chargpt-long.pbtxt --batch-size=1 --entry=forward_grad"
  )
  # The three GPTs of random_models.py's first six edge-shape models (a
  # batch of 1, one head, widths of 1 and 3, a context of 2 or 3, a
  # positional table longer than the context, 2053 words: rows past the row
  # kernels' slots): one train_step each on a GPU's real threads, where the
  # host's one-thread emulation sees no partial slot. (Its MLPs, 257 wide
  # into 2053 classes, would carry 37 MB of references.)
  "$python" "$root/test/e2e/random_models.py" generate --count=6 --seed=3 \
    --shapes=edge --out-dir="$dir/edge" > /dev/null || die "generating the edge models failed"
  local i
  for i in 0 2 4; do
    cases+=("edge-$i|$dir/edge/rand-3-$i-edge.pbtxt --entry=train_step --step=50 --state=random --seed=$i")
  done
  local c name flags
  for c in "${cases[@]}"; do
    name=${c%%|*} flags=${c#*|}
    # shellcheck disable=SC2086
    "$python" "$root/test/e2e/compare_compiled.py" $flags --sinterc=sinterc \
      --target=cuda --prepare --work-dir="$dir/cases/$name" \
      || die "preparing $name failed"
    # What replay does not read.
    rm -f "$dir/cases/$name"/in-f64.safetensors "$dir/cases/$name"/ref0.safetensors \
          "$dir/cases/$name"/model-f64.pbtxt
    find "$dir/cases/$name/dump" -name '*.mlir' -delete
  done

  echo "== step traces: the tiny GPT in f32 and bf16, one launch a kernel"
  # Step 1 traces one step of each on the GPU (--trace); bisecting the
  # traces here afterwards (`sinterc ... --bisect`, the command is printed)
  # holds every kernel and matmul the GPU ran against the interpreter, each
  # from the GPU's own inputs to it.
  mkdir -p "$dir/trace"
  "$python" - "$dir/trace" <<'PY' || die "writing the traces' inputs failed"
import os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT_E2E"]))
import numpy as np
from safetensors_io import write_safetensors
rng = np.random.default_rng(7)
for name, b, t, v in (("tiny", 2, 8, 11),):
    x = rng.integers(0, v, (b, t)).astype(np.int64)
    write_safetensors(os.path.join(sys.argv[1], name + "-in.safetensors"),
                      {"idx": x, "targets": np.roll(x, -1, axis=1)})
PY
  local traced model
  for traced in "tiny|$tiny|" "tiny-bf16|$tiny|--precision=bf16_mixed"; do
    IFS='|' read -r name model flags <<< "$traced"
    # shellcheck disable=SC2086
    "$sinterc" "$model" --target=cuda --cuda-merge-launches=false $flags \
      -o "$dir/trace/$name" || die "compiling $name for a trace failed"
  done

  echo "== char-GPT, 200 steps at batch 4 on the CPU target (the curve to match)"
  "$sinterc" "$root/examples/chargpt.pbtxt" --batch-size=4 -o "$dir/chargpt-cpu" \
    || die "compiling char-GPT for the CPU failed"
  "$dir/chargpt-cpu" --steps=200 --data="$root/examples/data/chargpt" \
    --log-jsonl="$dir/chargpt-cpu.jsonl" --quiet || die "the CPU run failed"
  rm -f "$dir/chargpt-cpu"
  "$sinterc" "$root/examples/chargpt.pbtxt" --target=cuda --batch-size=4 \
    -o "$dir/chargpt-cuda" || die "compiling char-GPT for CUDA failed"
  # One launch a kernel (369 launches a step instead of 193): step 2 times
  # both, char-GPT's small step being where launches weigh most.
  "$sinterc" "$root/examples/chargpt.pbtxt" --target=cuda --batch-size=4 \
    --cuda-merge-launches=false -o "$dir/chargpt-cuda-apart" \
    || die "compiling char-GPT for CUDA (launches apart) failed"
  echo "== GPT-2 124M, bf16 mixed, batch 16, for CUDA"
  # One optimizer step a batch of 16, as the PyTorch peer takes: with the
  # example's 40 accumulation steps every timed step would also add each
  # gradient into its accumulator ((accumulator + gradient) / K, 146
  # kernels, 1 GB a step; the H200 runs up to 2026-12-04 included them).
  local gpt2="$dir/gpt2_124m.pbtxt"
  grep -v '^ *grad_accumulation_steps:' "$root/examples/gpt2_124m.pbtxt" \
    > "$gpt2" || die "writing $gpt2 failed"
  "$sinterc" "$gpt2" --target=cuda \
    --precision=bf16_mixed --batch-size=16 --dump-dir="$dir/gpt2-dump" \
    -o "$dir/gpt2-cuda" || die "compiling GPT-2 for CUDA failed"
  find "$dir/gpt2-dump" -name '*.mlir' -delete
  # The same with the row kernels keeping nothing across their phases
  # (--cuda-row-slots=0, the form before the slots), and with one launch a
  # kernel (--cuda-merge-launches=false, the form before merged launches):
  # step 3 times all three, so one run shows what each gains or loses per
  # kernel.
  "$sinterc" "$gpt2" --target=cuda \
    --precision=bf16_mixed --batch-size=16 --cuda-row-slots=0 \
    -o "$dir/gpt2-cuda-rows0" || die "compiling GPT-2 for CUDA (row slots 0) failed"
  "$sinterc" "$gpt2" --target=cuda \
    --precision=bf16_mixed --batch-size=16 --cuda-merge-launches=false \
    -o "$dir/gpt2-cuda-apart" || die "compiling GPT-2 for CUDA (launches apart) failed"
  # And with attention's matmuls whole (--causal-matmuls=false, the form
  # before their blocks): what the blocks gain, and a build to time if
  # cuBLASLt refuses a block's layout.
  "$sinterc" "$gpt2" --target=cuda \
    --precision=bf16_mixed --batch-size=16 --causal-matmuls=false \
    -o "$dir/gpt2-cuda-whole" || die "compiling GPT-2 for CUDA (matmuls whole) failed"
  echo "== the cuBLASLt GELU-forms probe (host code, the toolkit here)"
  local toolkit=${CUDA_HOME:-/usr/local/cuda}
  c++ -O2 -std=c++17 -I"$root" -I"$toolkit/include" "$root/scripts/gpu/cublaslt_gelu_forms.cpp" \
    -L"$toolkit/lib64" -lcublasLt -lcudart_static -ldl -lrt -lpthread \
    -o "$dir/cublaslt-gelu-forms" || die "compiling the GELU-forms probe failed"

  # The libraries the binaries need that are not the C runtime's: the GPU
  # machine's own glibc, libstdc++ and libgcc are newer and stay.
  mkdir -p "$dir/lib"
  local lib
  for lib in $(ldd "$dir/chargpt-cuda" | awk '/=> \//{print $3}'); do
    case $(basename "$lib") in
      libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
  # xz: the binaries and references compress 40% better than with gzip,
  # and what travels must stay under the device tool's 64 MiB with the
  # working tree (run unpacks with Python's tarfile: no xz needed there).
  export XZ_OPT="-6 -T0"
  tar -C "$dir" -cJf "$dir/lib.txz" lib && rm -rf "$dir/lib"
  # Everything else in one archive.
  tar -C "$dir" -cJf "$dir/bundle.txz" cases trace chargpt-cpu.jsonl chargpt-cuda chargpt-cuda-apart \
    gpt2-cuda gpt2-cuda-rows0 gpt2-cuda-apart gpt2-cuda-whole gpt2-dump chargpt-small.pbtxt \
    chargpt-long.pbtxt tiny-tanh.pbtxt cublaslt-gelu-forms \
    && rm -rf "$dir"/cases "$dir"/trace "$dir"/edge "$dir"/chargpt-cuda "$dir"/chargpt-cuda-apart "$dir"/gpt2-cuda "$dir"/gpt2-cuda-rows0 \
      "$dir"/gpt2-cuda-apart "$dir"/gpt2-cuda-whole "$dir"/gpt2-dump "$dir"/cublaslt-gelu-forms
  echo "== prepared in $dir ($((SECONDS - t0)) s): $(du -sh "$dir" | cut -f1)"
  du -sh "$dir"/* | sed 's/^/   /'
}

# Seconds a step may take: its own limit, or what is left of the check's
# budget (GPU_CHECK_BUDGET, default 480 s) less a margin for the summary,
# whichever is smaller; 1 once the budget is spent, so later steps fail fast
# and the log still reaches its end.
limit() {
  local left=$((budget - (SECONDS - t0) - 15))
  [ "$left" -lt 1 ] && left=1
  echo $(($1 < left ? $1 : left))
}

# Which steps run (GPU_CHECK_STEPS, default all): a rerun after a failure
# repeats only the steps that need it.
want() { [[ " $steps " == *" $1 "* ]]; }

run() {
  [ -f "$dir/lib.txz" ] || die "no $dir/lib.txz: run 'prepare' first (here), then carry $dir"
  local out=${OUT:-$dir/out}
  mkdir -p "$out"
  exec > >(tee "$out/gpu-check.log") 2>&1
  local failed=0
  t0=$SECONDS budget=${GPU_CHECK_BUDGET:-480} steps=${GPU_CHECK_STEPS:-1 2 3 4 5 peer}
  echo "steps: $steps; budget: $budget s"
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  uname -r; ldd --version | head -1; "$python" --version
  "$python" -c 'import sys, tarfile
for f in sys.argv[2:]:
    with tarfile.open(f) as t:
        t.extractall(sys.argv[1], filter="tar")' "$dir" "$dir/lib.txz" "$dir/bundle.txz" \
    || die "cannot unpack $dir/lib.txz and bundle.txz"
  # cuBLASLt from PyTorch's wheel (nvidia-cublas), for Sinter's dlopen.
  local cublas
  cublas=$("$python" -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
  local nccl
  nccl=$("$python" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  export SINTER_CUDA_LIBS=${SINTER_CUDA_LIBS:-$cublas${nccl:+:$nccl}}
  echo "SINTER_CUDA_LIBS=$SINTER_CUDA_LIBS"; ls "$SINTER_CUDA_LIBS" 2>/dev/null | head -5
  local sinter_env=(env "LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  "${sinter_env[@]}" ldd "$dir/chargpt-cuda" | grep -i 'not found' && failed=1

  ldconfig -p | grep -E 'libcuda\.so|libnvidia-ptxjitcompiler' | head -3

  # The order puts the quick, telling steps first, the peer last: a run cut
  # short by its budget keeps what matters most.
  if want 5; then
    echo "== 5. facts for later: where cuBLASLt's tanh-GELU training forms round (f32, bf16)"
    # Not a check: the CUDA target fuses these forms for f32 only, and this
    # measures what a bf16 version must match (scripts/gpu/cublaslt_gelu_forms.cpp).
    LD_LIBRARY_PATH="$SINTER_CUDA_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      timeout "$(limit 60)" "$dir/cublaslt-gelu-forms" || echo "(the probe failed)"
  fi

  if want 1; then
    echo "== 1. numbers: CUDA binaries against the reference interpreter"
    local case_dir
    for case_dir in "$dir"/cases/*/; do
      echo "-- $(basename "$case_dir")"
      if ! "${sinter_env[@]}" timeout "$(limit 90)" "$python" \
          "$root/test/e2e/compare_compiled.py" --replay="$case_dir"; then
        failed=1
        # Tell a wrong kernel from a wrong graph capture: the same case with
        # the steps enqueued one by one.
        echo "-- $(basename "$case_dir") again with SINTER_CUDA_GRAPHS=0"
        SINTER_CUDA_GRAPHS=0 "${sinter_env[@]}" timeout "$(limit 90)" "$python" \
          "$root/test/e2e/compare_compiled.py" --replay="$case_dir" \
          && echo "(passes without the CUDA graph: the capture is at fault)"
      fi
    done
  fi

  if want 1; then
    echo "== 1b. step traces for sinterc --bisect (run here on the returned traces.tar)"
    # In one archive: what comes back from $OUT is at most 8 files.
    local traced name model flags
    mkdir -p "$dir/traces"
    for traced in "tiny|" "tiny-bf16|--precision=bf16_mixed"; do
      IFS='|' read -r name flags <<< "$traced"
      if "${sinter_env[@]}" timeout "$(limit 60)" "$dir/trace/$name" \
          --inputs="$dir/trace/tiny-in.safetensors" \
          --trace="$dir/traces/trace-$name.safetensors" > /dev/null; then
        echo "trace-$name.safetensors: bisect with"
        echo "  build/bin/sinterc test/passes/Inputs/tiny_gpt.pbtxt --target=cuda --cuda-merge-launches=false $flags --bisect=FILE"
      else
        echo "tracing $name failed"; failed=1
      fi
    done
    tar -C "$dir/traces" -cf "$out/traces.tar" . || failed=1
  fi

  if want 2; then
    echo "== 2. char-GPT, 200 steps at batch 4: the CUDA target against the CPU's curve"
    # With a held-out evaluation every 100 steps: the evaluation program's
    # executor on the GPU too.
    if "${sinter_env[@]}" timeout "$(limit 120)" "$dir/chargpt-cuda" --steps=200 \
        --data="$root/examples/data/chargpt" --log-jsonl="$out/chargpt-cuda.jsonl" \
        --log-every=50 --eval-every=100 --profile; then
      "$python" "$root/scripts/gpu/loss_curves.py" "$dir/chargpt-cpu.jsonl" \
        "$out/chargpt-cuda.jsonl" || failed=1
    else
      echo "char-GPT training on CUDA failed"; failed=1
    fi
    echo "-- the same model with --cuda-merge-launches=false (one launch a kernel), 50 steps"
    "${sinter_env[@]}" timeout "$(limit 60)" "$dir/chargpt-cuda-apart" --steps=50 \
      --data="$root/examples/data/chargpt" --quiet --profile 2>&1 \
      | grep -E 'profile:|ms/run' | head -4
  fi

  if want 4; then
    echo "== 4. a checked run: char-GPT at a learning rate that diverges"
    # On the CPU (docs/Runtime.md) the loss is NaN at step 5 and the checked
    # re-run names the scores matmul of transformer.h.0.attn; on the GPU the
    # step may differ, the diagnosis must come (exit 1, the op named).
    local checked
    checked=$("${sinter_env[@]}" timeout "$(limit 120)" "$dir/chargpt-cuda" --steps=40 \
      --lr=1e6 --data="$root/examples/data/chargpt" --quiet 2>&1)
    local rc=$?
    echo "$checked"
    if [ $rc != 1 ] || ! grep -q "the first non-finite value" <<<"$checked" \
        || ! grep -q "of layer '" <<<"$checked"; then
      echo "the checked run did not name where the values went non-finite (exit $rc)"
      failed=1
    fi
  fi

  if want 3; then
    echo "== 3. speed: GPT-2 124M bf16, batch 16 x 1024 (Sinter, then PyTorch)"
    "$python" - "$dir/gpt2-dump" "$dir/gpt2-in.safetensors" <<'PY' || failed=1
import json, glob, os, sys
import numpy as np
from safetensors.numpy import save_file
prog = json.load(open(sorted(glob.glob(os.path.join(sys.argv[1], "*-step-program.json")))[0]))
bufs = prog["buffers"]
rng = np.random.default_rng(0)
tensors = {}
for a in prog["arguments"]:
    if a["kind"] != "input":
        continue
    shape = [int(d) for d in bufs[int(a["buffer"])]["shape"]]
    tensors[a["name"]] = rng.integers(0, 50257, size=shape, dtype=np.int64)
save_file(tensors, sys.argv[2])
print("inputs:", {k: v.shape for k, v in tensors.items()})
PY
    "${sinter_env[@]}" timeout "$(limit 120)" "$dir/gpt2-cuda" \
      --inputs="$dir/gpt2-in.safetensors" --outputs="$dir/gpt2-out.safetensors" \
      --steps=10 --profile || failed=1
    echo "-- the same steps enqueued one by one (SINTER_CUDA_GRAPHS=0): every kernel and matmul timed by events (all of them in gpt2-profile.txt)"
    SINTER_CUDA_GRAPHS=0 SINTER_PROFILE_ALL=1 "${sinter_env[@]}" timeout "$(limit 120)" \
      "$dir/gpt2-cuda" --inputs="$dir/gpt2-in.safetensors" \
      --outputs="$dir/gpt2-out-nograph.safetensors" --steps=10 --profile \
      > "$out/gpt2-profile.txt" 2>&1 || failed=1
    head -45 "$out/gpt2-profile.txt"
    local variant what
    for variant in rows0 apart whole; do
      case $variant in
        rows0) what="--cuda-row-slots=0 (row kernels recompute every phase from memory)" ;;
        apart) what="--cuda-merge-launches=false (one launch a kernel)" ;;
        whole) what="--causal-matmuls=false (attention's matmuls computed whole)" ;;
      esac
      echo "-- the same with $what"
      "${sinter_env[@]}" timeout "$(limit 60)" "$dir/gpt2-cuda-$variant" \
        --inputs="$dir/gpt2-in.safetensors" --outputs="$dir/gpt2-out-$variant.safetensors" \
        --steps=10 --profile 2>&1 | grep -E 'profile:|ms/run' | head -4
      SINTER_CUDA_GRAPHS=0 SINTER_PROFILE_ALL=1 "${sinter_env[@]}" timeout "$(limit 60)" \
        "$dir/gpt2-cuda-$variant" --inputs="$dir/gpt2-in.safetensors" \
        --outputs="$dir/gpt2-out-$variant-nograph.safetensors" --steps=10 --profile \
        > "$out/gpt2-$variant-profile.txt" 2>&1
      "$python" "$root/scripts/gpu/compare_profiles.py" \
        "$out/gpt2-$variant-profile.txt" "$out/gpt2-profile.txt" || true
    done
  fi
  if want peer; then
    echo "-- PyTorch: torch.compile + autocast bf16, the same model and batch"
    PYTHONUNBUFFERED=1 timeout "$(limit 240)" "$python" "$root/scripts/gpu/torch_gpt2.py" \
      --batch=16 --steps=10 --mode=compile || echo "(the PyTorch peer failed)"
  fi

  echo "== gpu-check: $((SECONDS - t0)) s, $([ $failed = 0 ] && echo PASS || echo FAIL)"
  return $failed
}

case $mode in
  prepare) prepare ;;
  run) ROOT=$root run ;;
  *) echo "usage: $0 prepare|run [DIR]" >&2; exit 2 ;;
esac

//===- CudaExecutor.cpp - the executor whose device is an NVIDIA GPU ------===//
//
// See CudaExecutor.h. The driver API, cuBLASLt and NCCL are resolved at
// run time (CudaLibraries.h), so the binary has no load-time dependency on
// a GPU library.
//
// The kernels' ABI (compiler/CodeGen/Cuda/CudaKernels.cpp): five
// memref<?xi8> descriptors (allocated, aligned, offset, size, stride; MLIR
// passes each field as a kernel parameter), then the launch's words as
// i64. The parameter values live in this executor (the slab descriptors
// once, each kernel's words with it), and cuLaunchKernel copies them at
// each launch.
//
// Matmuls map the step program's row-major `out[M,N] = lhs[M,K] @ rhs[K,N]`
// onto cuBLASLt's column-major view of the same bytes: D(N x M) = A(N x K)
// B(K x M) with A = rhs and B = lhs, so no operand moves and the bias
// (length N) is cuBLASLt's per-row bias of D.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CudaExecutorImpl.h"

#include "abi/StepProgram.pb.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <cublasLt.h>
#include <cuda.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace sinter::exec {

namespace sabi = sinter::abi;

namespace cuda {

CudaExecutor::~CudaExecutor() {
  if (!drv)
    return;
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(watchMu);
      watchStop = true;
    }
    watchCv.notify_all();
    watchdog.join();
  }
  // A communicator with work still queued (a run that failed part-way) is
  // aborted: destroying it would wait for collectives a peer may never
  // join. An idle one is finalized (non-blocking: polled, and aborted if
  // that outlasts the job's timeout), then destroyed.
  if (ncclComm) {
    bool pending = false;
    for (CUstream stream : streams)
      pending |= stream && drv->streamQuery(stream) == CUDA_ERROR_NOT_READY;
    ncclResult_t r = pending ? ncclInternalError : nccl->commFinalize(ncclComm);
    auto t0 = std::chrono::steady_clock::now();
    while (r == ncclInProgress &&
           std::chrono::steady_clock::now() - t0 < job.timeout) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      nccl->commGetAsyncError(ncclComm, &r);
    }
    if (r == ncclSuccess)
      nccl->commDestroy(ncclComm);
    else
      abortNccl();
  }
  for (CUstream stream : streams)
    if (stream)
      drv->streamSynchronize(stream);
  if (graphExec)
    drv->graphExecDestroy(graphExec);
  if (graph)
    drv->graphDestroy(graph);
  for (CUevent e : events)
    drv->eventDestroy(e);
  for (CUevent e : timing)
    drv->eventDestroy(e);
  for (auto &whole : matmuls) {
    if (!whole)
      continue;
    auto destroy = [&](const LtMatmul &m) {
      for (cublasLtMatrixLayout_t layout : {m.a, m.b, m.d})
        if (layout)
          lt->layoutDestroy(layout);
      if (m.desc)
        lt->descDestroy(m.desc);
    };
    destroy(*whole);
    for (const auto &block : whole->blocks)
      destroy(*block);
  }
  if (ltHandle)
    lt->destroy(ltHandle);
  if (workspace)
    drv->memFree(workspace);
  if (staging)
    drv->memFreeHost(staging);
  for (int s = 0; s < sabi::kNumSlabs; ++s)
    if (slabs[s] && !borrowed[s])
      drv->memFree(slabs[s]);
  for (CUdeviceptr w : wire)
    if (w)
      drv->memFree(w);
  if (wireModule)
    drv->moduleUnload(wireModule);
  if (module)
    drv->moduleUnload(module);
  for (CUstream stream : streams)
    if (stream)
      drv->streamDestroy(stream);
  if (haveContext)
    drv->primaryCtxRelease(device);
}

absl::Status CudaExecutor::open(std::string_view image) {
  SINTER_CU(drv->init(0), "initializing the CUDA driver");
  int count = 0;
  SINTER_CU(drv->deviceGetCount(&count), "counting GPUs");
  if (count == 0)
    return sinter::FailedPreconditionError(
        SINTER_HERE, "the CUDA driver sees no GPU (CUDA_VISIBLE_DEVICES?)");
  int ordinal = 0;
  if (const char *local = std::getenv("LOCAL_RANK"))
    ordinal = std::atoi(local) % count;
  SINTER_CU(drv->deviceGet(&device, ordinal), "opening the GPU");
  char name[256] = {};
  drv->deviceGetName(name, sizeof(name), device);
  deviceName = name;
  CUcontext ctx = nullptr;
  SINTER_CU(drv->primaryCtxRetain(&ctx, device), "creating a context");
  haveContext = true;
  SINTER_CU(drv->ctxSetCurrent(ctx), "creating a context");
  int major = 0, minor = 0;
  SINTER_CU(drv->deviceGetAttribute(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
            "reading the GPU's architecture");
  SINTER_CU(drv->deviceGetAttribute(
                &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
            "reading the GPU's architecture");
  bool isPtx = false;
  absl::StatusOr<std::string> code = pickCudaImage(image, major, minor, &isPtx);
  if (!code.ok())
    return sinter::FailedPreconditionError(
        SINTER_HERE, absl::StrCat(deviceName, ": ", code.status().message()));
  SINTER_CU(drv->moduleLoadData(&module, code->data()),
            isPtx ? "loading the kernels (compiling their PTX)"
                  : "loading the kernels");
  for (CUstream &stream : streams)
    SINTER_CU(drv->streamCreate(&stream, CU_STREAM_NON_BLOCKING),
              "creating the compute and communication streams");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaExecutor>>
CudaExecutor::create(StepProgram program, std::string_view image,
                     const ExecutorOptions &options) {
  SINTER_ASSIGN_OR_RETURN(const CudaDriver *driver, loadCudaDriver());
  std::unique_ptr<CudaExecutor> ex(new CudaExecutor(std::move(program)));
  ex->drv = driver;
  const CudaDriver *drv = driver;
  const StepProgram &prog = ex->prog;
  // Gradient accumulation: the accumulate program runs in the step
  // program's params and opt_state slabs, on the same device.
  const CudaExecutor *share = nullptr;
  if (options.shareStateWith) {
    share = dynamic_cast<const CudaExecutor *>(options.shareStateWith);
    if (!share)
      return sinter::InvalidArgumentError(
          SINTER_HERE, "the executor to share state with is not a CUDA one");
    SINTER_RETURN_IF_ERROR(checkSharedState(prog, share->prog));
  }
  SINTER_RETURN_IF_ERROR(ex->open(image));
  if (const char *graphs = std::getenv("SINTER_CUDA_GRAPHS"))
    ex->useGraph = std::string_view(graphs) != "0";
  ex->profiling = options.profile;
  ex->triangleBlockRows = options.matmul.triangleBlockRows;

  for (int s = 0; s < sabi::kNumSlabs; ++s) {
    if (share && (s == sabi::Slab::params || s == sabi::Slab::opt_state)) {
      ex->slabs[s] = share->slabs[s];
      ex->borrowed[s] = true;
      auto base = static_cast<int64_t>(ex->slabs[s]);
      ex->slabDescriptors[s] = {base, base, 0, prog.slabBytes[s], 1};
      continue;
    }
    size_t bytes = static_cast<size_t>(std::max<int64_t>(prog.slabBytes[s], 1));
    std::string what = absl::StrFormat(
        "allocating slab '%s' (%d bytes) on %s",
        sabi::slabName(static_cast<sabi::SlabKind>(s)), bytes, ex->deviceName);
    SINTER_CU(drv->memAlloc(&ex->slabs[s], bytes), what);
    SINTER_CU(drv->memsetD8Async(ex->slabs[s], 0, bytes,
                                 ex->streams[kComputeStream]),
              what);
    auto base = static_cast<int64_t>(ex->slabs[s]);
    ex->slabDescriptors[s] = {base, base, 0, prog.slabBytes[s], 1};
  }
  SINTER_RETURN_IF_ERROR(ex->syncCompute("zeroing the slabs"));
  for (const Constant &c : prog.constants)
    SINTER_RETURN_IF_ERROR(
        ex->upload(c.buffer, c.bytes.data(), c.bytes.size()));
  for (const Argument &a : prog.arguments) {
    if (a.kind == sabi::Argument::step)
      ex->stepBuffer = a.buffer;
    if (a.kind == sabi::Argument::hyper)
      SINTER_RETURN_IF_ERROR(ex->setHyper(a.name, *a.defaultValue));
  }

  // Kernels by name, each with its parameters.
  ex->functions.resize(prog.kernels.size());
  ex->words.resize(prog.kernels.size());
  ex->params.resize(prog.kernels.size());
  for (size_t i = 0; i < prog.kernels.size(); ++i) {
    const Kernel &k = prog.kernels[i];
    if (k.cudaBlock < 1)
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrFormat("kernel %d '%s' is not a CUDA kernel (no "
                          "cuda_block): the program was compiled for "
                          "another target",
                          i, k.name));
    SINTER_CU(
        drv->moduleGetFunction(&ex->functions[i], ex->module, k.symbol.c_str()),
        absl::StrFormat("kernel %d '%s' (%s)", i, k.name, k.symbol));
    ex->words[i] = k.args;
    std::vector<void *> &p = ex->params[i];
    for (auto &descriptor : ex->slabDescriptors)
      for (int64_t &field : descriptor)
        p.push_back(&field);
    for (int64_t &w : ex->words[i])
      p.push_back(&w);
    // Past the kernel's parameters, so the driver never reads it; the
    // stand-in driver (test/unit/runtime/FakeCuda.cpp) counts the words by
    // it to run the kernel's host version.
    p.push_back(nullptr);
  }

  // The queue work of a run, and its events.
  SINTER_ASSIGN_OR_RETURN(ex->plan, planDeviceQueue(prog));
  ex->events.resize(ex->plan.numEvents);
  for (CUevent &e : ex->events)
    SINTER_CU(drv->eventCreate(&e, CU_EVENT_DISABLE_TIMING),
              "creating the streams' events");

  ex->matmuls.resize(prog.steps.size());
  CudaExecutor::GeluForms geluForms;
  for (size_t s = 0; s < prog.steps.size(); ++s)
    if (prog.steps[s].kind == sabi::Step::kMatmul) {
      const MatmulStep &mm = prog.steps[s].matmul;
      SINTER_RETURN_IF_ERROR(ex->prepareMatmul(s, mm));
      if (mm.aux < 0)
        continue;
      bool hasBias = prog.matmulDesc(mm).hasBias;
      if (mm.activation == sabi::MatmulStep::dgelu_tanh)
        (mm.biasGrad >= 0 ? geluForms.dgeluBiasGrad : geluForms.dgelu) = true;
      else
        (hasBias ? geluForms.auxBias : geluForms.aux) = true;
    }
  // The training forms' definitions are this executor's reading of
  // cublasLt.h: held against the library once before they train.
  if (geluForms.any())
    SINTER_RETURN_IF_ERROR(ex->checkGeluForms(geluForms));
  return ex;
}

absl::Status CudaExecutor::prepareMatmul(size_t stepIndex,
                                         const MatmulStep &mm) {
  if (!lt) {
    SINTER_ASSIGN_OR_RETURN(lt, loadCublasLt());
    SINTER_LT(lt->create(&ltHandle), "creating the cuBLASLt handle");
  }
  // The workspace is the program's (arena bytes the memory plan gives this
  // step alone); a program without one shares a fallback of our own.
  if (mm.workspace < 0 && !workspace)
    SINTER_CU(drv->memAlloc(&workspace, kWorkspaceBytes),
              "allocating the cuBLASLt workspace");
  const Buffer &lhs = prog.buffers[mm.lhs], &rhs = prog.buffers[mm.rhs];
  const MatmulDesc desc = prog.matmulDesc(mm);
  SINTER_ASSIGN_OR_RETURN(MatmulGeometry g, analyzeMatmul(desc));
  bool folded = false;
  // An rhs shared by the whole batch and an lhs that is the whole batch,
  // its rows in order (not transposed): the batch is more rows of one
  // product, one call (a linear layer on [batch, positions, features]).
  if (!mm.transposeLhs && g.batchCount > 1 && g.lhsBatch == g.outBatch &&
      std::all_of(g.rhsBatch.begin(), g.rhsBatch.end(),
                  [](int64_t d) { return d == 1; })) {
    folded = true;
    g.m *= g.batchCount;
    g.batchCount = 1;
    g.outBatch.assign(g.outBatch.size(), 1);
    g.lhsBatch = g.outBatch;
  }
  std::string what = absl::StrFormat(
      "matmul step %d (%s [%s] x %s [%s])", stepIndex,
      lhs.name.empty() ? "lhs" : lhs.name, absl::StrJoin(lhs.shape, "x"),
      rhs.name.empty() ? "rhs" : rhs.name, absl::StrJoin(rhs.shape, "x"));
  // The activation is cuBLASLt's epilogue; it has no erf GELU (the CUDA
  // target never puts one in a matmul).
  if (mm.activation == sabi::MatmulStep::gelu_erf)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat(what, ": cuBLASLt has no erf GELU "
                                        "epilogue (the program was compiled "
                                        "for another target)"));
  // The operands' type, and out's (and bias's): the same, or f32 from
  // half operands (CUBLAS_COMPUTE_32F takes both).
  auto cudaType = [](sabi::DType t) -> std::optional<cudaDataType_t> {
    switch (t) {
    case sabi::ElementType::f32:
      return CUDA_R_32F;
    case sabi::ElementType::bf16:
      return CUDA_R_16BF;
    case sabi::ElementType::f16:
      return CUDA_R_16F;
    default:
      return std::nullopt;
    }
  };
  std::optional<cudaDataType_t> type = cudaType(desc.dtype),
                                outType = cudaType(desc.outType);
  if (!type || !outType)
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrCat(what, ": cuBLASLt matmuls are f32, bf16 "
                                        "or f16"));
  const int64_t es = sabi::elementBytes(desc.dtype),
                eo = sabi::elementBytes(desc.outType);
  // Held by the executor from here, so that a failure below leaves the
  // descriptors made so far to its destructor.
  matmuls[stepIndex] = std::make_unique<LtMatmul>();
  // One call (or one per batch item) for the product block `b` of out, from
  // the stretch of K `b` names, into `m`; the whole product is one block.
  // Views of the operands: offsets, and the whole matrices' leading
  // dimensions and batch strides.
  auto prepare = [&](LtMatmul *m, const TriangleBlock &b) -> absl::Status {
    const int64_t mB = b.r1 - b.r0, kB = b.k1 - b.k0, nB = b.c1 - b.c0;
    m->alpha = desc.alpha;
    if (mm.workspace >= 0) {
      // cuBLASLt wants its workspace 256-byte aligned; arena buffers lie at
      // 64 (the slab itself at 256), so up to 192 bytes are skipped.
      CUdeviceptr at = address(mm.workspace);
      CUdeviceptr aligned = (at + 255) / 256 * 256;
      auto bytes = static_cast<CUdeviceptr>(prog.buffers[mm.workspace].bytes);
      m->workspace = aligned;
      m->workspaceBytes = bytes > aligned - at
                              ? static_cast<size_t>(bytes - (aligned - at))
                              : 0;
    } else {
      m->workspace = workspace;
      m->workspaceBytes = kWorkspaceBytes;
    }
    const int64_t lhsAt =
                      mm.transposeLhs ? b.k0 * g.m + b.r0 : b.r0 * g.k + b.k0,
                  rhsAt =
                      mm.transposeRhs ? b.c0 * g.k + b.k0 : b.k0 * g.n + b.c0;
    m->rhs = address(mm.rhs) + static_cast<CUdeviceptr>(rhsAt * es);
    m->lhs = address(mm.lhs) + static_cast<CUdeviceptr>(lhsAt * es);
    m->out =
        address(mm.out) + static_cast<CUdeviceptr>((b.r0 * g.n + b.c0) * eo);
    // fp32 products in TF32 only when asked (docs/Cuda.md).
    const char *tf32 = std::getenv("SINTER_CUDA_TF32");
    cublasComputeType_t compute =
        desc.dtype == sabi::ElementType::f32 && tf32 && std::string(tf32) == "1"
            ? CUBLAS_COMPUTE_32F_FAST_TF32
            : CUBLAS_COMPUTE_32F;
    SINTER_LT(lt->descCreate(&m->desc, compute, CUDA_R_32F), what);
    cublasOperation_t opA = mm.transposeRhs ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = mm.transposeLhs ? CUBLAS_OP_T : CUBLAS_OP_N;
    SINTER_LT(
        lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
        what);
    SINTER_LT(
        lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
        what);
    // Bias, then activation: cuBLASLt's order, as the step program's. With
    // aux, the training forms: GELU_AUX also writes the activation's input;
    // DGELU multiplies the product by the derivative at aux, and _BGRAD sums
    // the result's rows into the bias pointer.
    const bool relu = mm.activation == sabi::MatmulStep::relu,
               gelu = mm.activation == sabi::MatmulStep::gelu_tanh,
               dgelu = mm.activation == sabi::MatmulStep::dgelu_tanh,
               aux = mm.aux >= 0, biasGrad = mm.biasGrad >= 0;
    cublasLtEpilogue_t epilogue =
        dgelu ? (biasGrad ? CUBLASLT_EPILOGUE_DGELU_BGRAD
                          : CUBLASLT_EPILOGUE_DGELU)
        : desc.hasBias
            ? (relu   ? CUBLASLT_EPILOGUE_RELU_BIAS
               : gelu ? (aux ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                             : CUBLASLT_EPILOGUE_GELU_BIAS)
                      : CUBLASLT_EPILOGUE_BIAS)
            : (relu ? CUBLASLT_EPILOGUE_RELU
               : gelu
                   ? (aux ? CUBLASLT_EPILOGUE_GELU_AUX : CUBLASLT_EPILOGUE_GELU)
                   : CUBLASLT_EPILOGUE_DEFAULT);
    if (aux && (g.batchCount != 1 || g.n % 8 != 0))
      return sinter::InvalidArgumentError(
          SINTER_HERE,
          absl::StrCat(what,
                       ": cuBLASLt's aux matrix needs one product (the "
                       "batch folded into rows) and rows of a multiple "
                       "of 8 elements; this one is a batch of ",
                       g.batchCount, " with rows of ", g.n));
    if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
      SINTER_LT(lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                            sizeof(epilogue)),
                what);
    if (aux) {
      // Column-major like D: N rows (our columns), one per output row.
      CUdeviceptr auxPointer = address(mm.aux);
      auto auxLd = static_cast<int64_t>(g.n);
      SINTER_LT(lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                            &auxPointer, sizeof(auxPointer)),
                what);
      SINTER_LT(lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                            &auxLd, sizeof(auxLd)),
                what);
    }
    if (desc.hasBias || biasGrad) {
      CUdeviceptr bias = address(biasGrad ? mm.biasGrad : mm.bias);
      SINTER_LT(lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                            sizeof(bias)),
                what);
      int32_t biasType = *outType;
      SINTER_LT(lt->descSet(m->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                            &biasType, sizeof(biasType)),
                what);
    }
    // Column-major: A = rhs (N x K as op(A)), B = lhs (K x M), D = N x M;
    // a block's rows and columns, the whole matrices' leading dimensions.
    uint64_t aRows = mm.transposeRhs ? kB : nB,
             aCols = mm.transposeRhs ? nB : kB,
             aLd = mm.transposeRhs ? g.k : g.n;
    uint64_t bRows = mm.transposeLhs ? mB : kB,
             bCols = mm.transposeLhs ? kB : mB,
             bLd = mm.transposeLhs ? g.m : g.k;
    SINTER_LT(lt->layoutCreate(&m->a, *type, aRows, aCols, aLd), what);
    SINTER_LT(lt->layoutCreate(&m->b, *type, bRows, bCols, bLd), what);
    SINTER_LT(lt->layoutCreate(&m->d, *outType, nB, mB, g.n), what);

    // Batches: one strided call when each operand is either the whole batch
    // or one matrix for all of it; else a call per output matrix.
    auto product = [](const std::vector<int64_t> &v) {
      int64_t p = 1;
      for (int64_t d : v)
        p *= d;
      return p;
    };
    int64_t lhsCount = product(g.lhsBatch), rhsCount = product(g.rhsBatch);
    bool strided = (lhsCount == 1 || g.lhsBatch == g.outBatch) &&
                   (rhsCount == 1 || g.rhsBatch == g.outBatch);
    int64_t aSize = g.k * g.n, bSize = g.m * g.k, dSize = g.m * g.n;
    if (strided && g.batchCount > 1) {
      int32_t count = static_cast<int32_t>(g.batchCount);
      int64_t aStride = rhsCount == 1 ? 0 : aSize,
              bStride = lhsCount == 1 ? 0 : bSize, dStride = dSize;
      for (auto [layout, stride] :
           {std::pair{m->a, aStride}, {m->b, bStride}, {m->d, dStride}}) {
        SINTER_LT(lt->layoutSet(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                &count, sizeof(count)),
                  what);
        SINTER_LT(lt->layoutSet(layout,
                                CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                &stride, sizeof(stride)),
                  what);
      }
      m->calls.push_back({});
    } else if (strided) {
      m->calls.push_back({});
    } else {
      size_t rank = g.outBatch.size();
      std::vector<int64_t> index(rank, 0);
      for (int64_t item = 0; item < g.batchCount; ++item) {
        int64_t li = 0, ri = 0;
        for (size_t d = 0; d < rank; ++d) {
          li = li * g.lhsBatch[d] + (g.lhsBatch[d] == 1 ? 0 : index[d]);
          ri = ri * g.rhsBatch[d] + (g.rhsBatch[d] == 1 ? 0 : index[d]);
        }
        m->calls.push_back(
            {ri * aSize * es, li * bSize * es, item * dSize * eo});
        for (size_t d = rank; d-- > 0;)
          if (++index[d] < g.outBatch[d])
            break;
          else
            index[d] = 0;
      }
    }

    // The algorithm may assume no more alignment than every call's pointers,
    // leading dimensions and batch strides have. cuBLASLt's default
    // preference is 256 bytes; buffers are placed at abi::kBufferAlignment
    // (64), and rows or a batch's matrices can lie as little as an element
    // apart.
    auto alignment = [&](CUdeviceptr base, int64_t LtMatmul::Call::*offset,
                         uint64_t rowBytes, uint64_t matrixBytes) {
      uint64_t bits = base | rowBytes | (g.batchCount > 1 ? matrixBytes : 0);
      for (const LtMatmul::Call &c : m->calls)
        bits |= base + static_cast<uint64_t>(c.*offset);
      uint32_t align = 256;
      while (align > 1 && (bits & (align - 1)))
        align /= 2;
      return align;
    };
    const uint32_t alignA = alignment(m->rhs, &LtMatmul::Call::a, aLd * es,
                                      aSize * es),
                   alignB = alignment(m->lhs, &LtMatmul::Call::b, bLd * es,
                                      bSize * es),
                   alignD = alignment(m->out, &LtMatmul::Call::d, g.n * eo,
                                      dSize * eo);
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligned[] =
        {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignA},
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignB},
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignD},
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignD}};
    cublasLtMatmulPreference_t pref = nullptr;
    SINTER_LT(lt->prefCreate(&pref), what);
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                    decltype(lt->prefDestroy)>
        prefOwner(pref, lt->prefDestroy);
    size_t workspaceBytes = m->workspaceBytes;
    SINTER_LT(lt->prefSet(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                          &workspaceBytes, sizeof(workspaceBytes)),
              what);
    for (const auto &[attribute, bytes] : aligned)
      SINTER_LT(lt->prefSet(pref, attribute, &bytes, sizeof(bytes)), what);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st = lt->heuristic(ltHandle, m->desc, m->a, m->b, m->d, m->d,
                                      pref, 1, &result, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      return sinter::InternalError(
          SINTER_HERE,
          absl::StrFormat("%s: cuBLASLt has no algorithm for M=%d K=%d N=%d "
                          "(batch %d, %s)",
                          what, mB, kB, nB, g.batchCount,
                          st == CUBLAS_STATUS_SUCCESS ? "no result"
                                                      : lt->statusString(st)));
    m->algo = result.algo;
    return absl::OkStatus();
  };

  // A triangle of an operand that is 0 (sinter-causal-matmuls): blocks
  // along the diagonal that leave out the products of zeros, as the CPU's
  // backend splits it. out_lower is computed whole here (skipping outputs
  // would need their bytes filled with 0, a launch per block and matrix);
  // so is a batch folded into rows.
  const bool operandTriangle = desc.triangle != sabi::MatmulStep::full &&
                       desc.triangle != sabi::MatmulStep::out_lower;
  const int64_t square = triangleSize(desc, g),
                rows = triangleBlockRows > 0 ? triangleBlockRows
                                             : defaultTriangleBlockRows(square);
  LtMatmul *whole = matmuls[stepIndex].get();
  if (!operandTriangle || folded || rows >= square)
    return prepare(whole, {0, g.m, 0, g.k, 0, g.n, g.n});
  for (const TriangleBlock &b : triangleBlocks(desc, g, rows)) {
    whole->blocks.push_back(std::make_unique<LtMatmul>());
    SINTER_RETURN_IF_ERROR(prepare(whole->blocks.back().get(), b));
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::enqueueComputeStep(int64_t s, CUstream stream) {
  const Step &step = prog.steps[s];
  switch (step.kind) {
  case sabi::Step::kKernel: {
    const Kernel &k = prog.kernels[step.kernel];
    SINTER_CU(drv->launchKernel(functions[step.kernel],
                                static_cast<unsigned>(k.extent), 1, 1,
                                static_cast<unsigned>(k.cudaBlock), 1, 1, 0,
                                stream, params[step.kernel].data(), nullptr),
              absl::StrFormat("step %d, kernel '%s'", s, k.name));
    break;
  }
  case sabi::Step::kMatmul: {
    float beta = 0;
    auto ptr = [](CUdeviceptr base, int64_t offset) {
      return reinterpret_cast<void *>(base + static_cast<CUdeviceptr>(offset));
    };
    const LtMatmul &whole = *matmuls[s];
    for (size_t p = 0; p < std::max<size_t>(1, whole.blocks.size()); ++p) {
      const LtMatmul &m = whole.blocks.empty() ? whole : *whole.blocks[p];
      for (const LtMatmul::Call &c : m.calls) {
        void *d = ptr(m.out, c.d);
        SINTER_LT(lt->matmul(ltHandle, m.desc, &m.alpha, ptr(m.rhs, c.a), m.a,
                             ptr(m.lhs, c.b), m.b, &beta, d, m.d, d, m.d,
                             &m.algo, reinterpret_cast<void *>(m.workspace),
                             m.workspaceBytes,
                             reinterpret_cast<cudaStream_t>(stream)),
                  absl::StrFormat("step %d (matmul)", s));
      }
    }
    break;
  }
  case sabi::Step::kCopy: {
    const Buffer &src = prog.buffers[step.src];
    SINTER_CU(drv->memcpyDtoDAsync(address(step.dst), address(step.src),
                                   static_cast<size_t>(src.bytes), stream),
              absl::StrFormat("step %d (copy)", s));
    break;
  }
  default:
    return sinter::InternalError(
        SINTER_HERE, absl::StrFormat("step %d is not a compute step", s));
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::enqueue(std::vector<int64_t> &inFlight,
                                   bool timed) {
  // The plan DeviceQueue.h made and checks: compute steps on one stream,
  // collectives on the other, events between them.
  size_t marks = 0;
  auto mark = [&]() -> absl::Status {
    if (!timed)
      return absl::OkStatus();
    if (marks == timing.size()) {
      CUevent e = nullptr;
      SINTER_CU(drv->eventCreate(&e, CU_EVENT_DEFAULT),
                "creating a profiling event");
      timing.push_back(e);
    }
    SINTER_CU(drv->eventRecord(timing[marks++], streams[kComputeStream]),
              "recording a profiling event");
    return absl::OkStatus();
  };
  SINTER_RETURN_IF_ERROR(mark());
  for (const QueueOp &op : plan.ops) {
    int64_t s = op.step;
    CUstream stream = streams[op.stream];
    switch (op.kind) {
    case QueueOp::kComputeStep:
      SINTER_RETURN_IF_ERROR(enqueueComputeStep(s, stream));
      break;
    case QueueOp::kRecordEvent:
      SINTER_CU(drv->eventRecord(events[op.event], stream),
                absl::StrFormat("step %d (event)", s));
      break;
    case QueueOp::kWaitEvent:
      SINTER_CU(drv->streamWaitEvent(stream, events[op.event], 0),
                absl::StrFormat("step %d (wait)", s));
      break;
    case QueueOp::kCollective:
      SINTER_RETURN_IF_ERROR(enqueueCollective(s, stream, inFlight));
      break;
    }
    if (op.stream == kComputeStream)
      SINTER_RETURN_IF_ERROR(mark());
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::recordTimes() {
  // The events enqueue() recorded, in the same order: the time between two
  // is the operation on the compute stream between them (a step, or a wait
  // for a collective), as the device ran it.
  size_t next = 1;
  for (const QueueOp &op : plan.ops) {
    if (op.stream != kComputeStream)
      continue;
    float ms = 0;
    SINTER_CU(drv->eventElapsedTime(&ms, timing[next - 1], timing[next]),
              "reading a profiling event");
    ++next;
    double seconds = 1e-3 * static_cast<double>(ms);
    if (op.kind == QueueOp::kComputeStep)
      recorder.addStep(prog, op.step, seconds);
    else if (op.kind == QueueOp::kWaitEvent)
      recorder.addCommWait(op.step, seconds);
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::runChecked() {
  // The steps one at a time in program order, as the CPU executor runs
  // them, on the compute stream alone (a collective too), with the device
  // synchronized around each so that every buffer the step touches can be
  // copied to the host and scanned there (Numerics.h). Slow, as a checked
  // run is meant to be; no graph, no overlap.
  numericsLog.steps.clear();
  CUstream stream = streams[kComputeStream];
  std::vector<std::vector<unsigned char>> copies(prog.buffers.size());
  absl::Status copyError;
  // A buffer's bytes as the device holds them now; copied once per scan
  // phase (`fresh` is cleared at every synchronization).
  std::vector<bool> fresh(prog.buffers.size());
  const StepScanner::View view = [&](int64_t id) -> const void * {
    std::vector<unsigned char> &host = copies[id];
    if (!fresh[id]) {
      host.resize(static_cast<size_t>(prog.buffers[id].bytes));
      if (absl::Status st = download(id, host.data(), host.size()); !st.ok()) {
        if (copyError.ok())
          copyError = st;
        return nullptr;
      }
      fresh[id] = true;
    }
    return host.data();
  };
  auto synchronize = [&](int64_t s) -> absl::Status {
    SINTER_CU(drv->streamSynchronize(stream),
              absl::StrFormat("step %d (checked run)", s));
    fresh.assign(fresh.size(), false);
    return absl::OkStatus();
  };
  StepScanner scanner;
  for (size_t i = 0; i < prog.steps.size(); ++i) {
    const int64_t s = static_cast<int64_t>(i);
    if (checkNumerics) // a trace alone reads only the writes
      scanner.before(prog, s, view);
    SINTER_RETURN_IF_ERROR(copyError);
    switch (prog.steps[i].kind) {
    case sabi::Step::kStart: {
      std::vector<int64_t> inFlight;
      SINTER_RETURN_IF_ERROR(enqueueCollective(s, stream, inFlight));
      if (ncclOpened)
        SINTER_RETURN_IF_ERROR(finishWithCollectives(inFlight));
      break;
    }
    case sabi::Step::kDone:
      break; // the all-reduce finished at its start
    default:
      SINTER_RETURN_IF_ERROR(enqueueComputeStep(s, stream));
    }
    SINTER_RETURN_IF_ERROR(synchronize(s));
    if (checkNumerics)
      scanner.after(prog, view, numericsLog);
    if (observer)
      SINTER_RETURN_IF_ERROR(observer(s, view));
    SINTER_RETURN_IF_ERROR(copyError);
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::captureGraph() {
  CUstream origin = streams[kComputeStream];
  SINTER_CU(
      drv->streamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
      "capturing the step as a CUDA graph");
  // Captured, not run: an NCCL all-reduce too (NCCL supports capture; its
  // communicator and the wire buffers were made before).
  std::vector<int64_t> inFlight;
  absl::Status enqueued = enqueue(inFlight);
  CUgraph captured = nullptr;
  CUresult ended = drv->streamEndCapture(origin, &captured);
  if (!enqueued.ok()) {
    if (captured)
      drv->graphDestroy(captured);
    return enqueued;
  }
  if (ended != CUDA_SUCCESS)
    return cudaError(SINTER_HERE, *drv, ended, "cuStreamEndCapture",
                     "capturing the step as a CUDA graph (every stream must "
                     "join the compute stream)");
  CUresult made = drv->graphInstantiateWithFlags(&graphExec, captured, 0);
  if (made != CUDA_SUCCESS) {
    graphExec = nullptr;
    drv->graphDestroy(captured);
    return cudaError(SINTER_HERE, *drv, made, "cuGraphInstantiateWithFlags",
                     "instantiating the step's CUDA graph");
  }
  graph = captured;
  graphCollectives = std::move(inFlight);
  return absl::OkStatus();
}

absl::Status CudaExecutor::run() {
  auto t0 = std::chrono::steady_clock::now();
  // For the watchdog: a run in progress since t0, until this returns.
  runSince = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 t0.time_since_epoch())
                 .count();
  struct RunEnds {
    std::atomic<int64_t> &since;
    ~RunEnds() { since = 0; }
  } runEnds{runSince};
  // A data-parallel job's communicator and wire buffers exist before the
  // first enqueue, which may be a capture.
  const bool distributed = collectives && collectives->job().worldSize > 1;
  if (distributed && !ncclOpened)
    SINTER_RETURN_IF_ERROR(prepareCollectives());
  // The step is captured once as a graph and replayed: one launch instead
  // of one per kernel, the all-reduces inside it. The end of the run polls
  // NCCL as for enqueued steps.
  std::vector<int64_t> inFlight; // the all-reduces enqueued, for errors
  // --profile times each step with events between the steps where the
  // steps are enqueued one by one; a replayed graph gives the total only.
  const bool timed = profiling && !checkNumerics && !observer && !useGraph;
  if (checkNumerics || observer) {
    SINTER_RETURN_IF_ERROR(runChecked());
  } else if (useGraph) {
    if (!graphExec)
      SINTER_RETURN_IF_ERROR(captureGraph());
    SINTER_CU(drv->graphLaunch(graphExec, streams[kComputeStream]),
              "launching the step's CUDA graph");
    inFlight = graphCollectives;
  } else if (absl::Status enqueued = enqueue(inFlight, timed); !enqueued.ok()) {
    // The all-reduces already enqueued would wait for peers that go on
    // without this rank.
    if (ncclOpened && !inFlight.empty())
      abortNccl();
    return enqueued;
  }
  if (ncclOpened) {
    SINTER_RETURN_IF_ERROR(finishWithCollectives(inFlight));
  } else {
    for (CUstream stream : streams)
      SINTER_CU(drv->streamSynchronize(stream), "running the step");
  }
  stagingUsed = 0; // both streams are idle
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  if (timed)
    SINTER_RETURN_IF_ERROR(recordTimes());
  recorder.finishRun(seconds);
  return absl::OkStatus();
}

absl::StatusOr<bool> CudaExecutor::stage(int64_t bufferId, const void *host,
                                         size_t bytes,
                                         const std::string &what) {
  if (prog.buffers[bufferId].slab != sabi::Slab::io || bytes > kStagingBytes ||
      stagingUnavailable)
    return false;
  if (!staging &&
      drv->memHostAlloc(&staging, kStagingBytes, 0) != CUDA_SUCCESS) {
    // Pinning can fail where page-locked memory is scarce; the pageable
    // path is slower, not wrong.
    staging = nullptr;
    stagingUnavailable = true;
    return false;
  }
  // Each copy keeps its bytes until the compute stream has run it: the ring
  // starts over only once that stream was waited for (syncCompute, the end
  // of a run), which every step does.
  if (stagingUsed + bytes > kStagingBytes)
    SINTER_RETURN_IF_ERROR(syncCompute(what));
  unsigned char *slot = static_cast<unsigned char *>(staging) + stagingUsed;
  const auto align = static_cast<size_t>(sabi::kBufferAlignment);
  stagingUsed += (bytes + align - 1) / align * align;
  std::memcpy(slot, host, bytes);
  SINTER_CU(drv->memcpyHtoDAsync(address(bufferId), slot, bytes,
                                 streams[kComputeStream]),
            what);
  return true;
}

absl::Status CudaExecutor::upload(int64_t bufferId, const void *host,
                                  size_t bytes) {
  SINTER_RETURN_IF_ERROR(checkTransfer("upload to", bufferId, bytes));
  if (!bytes)
    return absl::OkStatus();
  std::string what = absl::StrFormat("upload to buffer %d", bufferId);
  SINTER_ASSIGN_OR_RETURN(bool staged, stage(bufferId, host, bytes, what));
  if (staged)
    return absl::OkStatus();
  SINTER_CU(drv->memcpyHtoDAsync(address(bufferId), host, bytes,
                                 streams[kComputeStream]),
            what);
  return syncCompute(what);
}

absl::Status CudaExecutor::download(int64_t bufferId, void *host,
                                    size_t bytes) const {
  SINTER_RETURN_IF_ERROR(checkTransfer("download from", bufferId, bytes));
  return downloadPart(bufferId, 0, host, bytes);
}

absl::Status CudaExecutor::downloadPart(int64_t bufferId, size_t offset,
                                        void *host, size_t bytes) const {
  SINTER_RETURN_IF_ERROR(checkPart("download from", bufferId, offset, bytes));
  if (!bytes)
    return absl::OkStatus();
  std::string what = absl::StrFormat("download from buffer %d", bufferId);
  SINTER_CU(drv->memcpyDtoHAsync(host, address(bufferId) + offset, bytes,
                                 streams[kComputeStream]),
            what);
  return syncCompute(what);
}

absl::Status CudaExecutor::syncCompute(std::string_view what) const {
  SINTER_CU(drv->streamSynchronize(streams[kComputeStream]), what);
  stagingUsed = 0; // every staged copy has run
  return absl::OkStatus();
}

absl::Status CudaExecutor::zeroBuffer(int64_t bufferId) {
  if (bufferId < 0 || bufferId >= static_cast<int64_t>(prog.buffers.size()))
    return sinter::InvalidArgumentError(
        SINTER_HERE, absl::StrFormat("zeroBuffer: no buffer %d", bufferId));
  std::string what = absl::StrFormat("zeroing buffer %d", bufferId);
  SINTER_CU(drv->memsetD8Async(address(bufferId), 0,
                               static_cast<size_t>(prog.buffers[bufferId].bytes),
                               streams[kComputeStream]),
            what);
  return syncCompute(what);
}

absl::Status CudaExecutor::setStep(int64_t step) {
  if (stepBuffer < 0)
    return absl::OkStatus();
  return upload(stepBuffer, &step, sizeof(step));
}

absl::StatusOr<int64_t> CudaExecutor::step() const {
  int64_t value = 0;
  if (stepBuffer >= 0)
    SINTER_RETURN_IF_ERROR(download(stepBuffer, &value, sizeof(value)));
  return value;
}

absl::Status CudaExecutor::setHyper(std::string_view name, double value) {
  SINTER_ASSIGN_OR_RETURN(HyperValue hyper, hyperValue(name, value));
  return upload(hyper.buffer, hyper.bytes, hyper.size);
}

std::string CudaExecutor::formatProfile(int topKernels) const {
  std::string device = deviceName;
  if (!profiling || checkNumerics || observer)
    device += ", the totals only";
  else if (useGraph)
    device += ", replaying a CUDA graph: the totals only "
              "(SINTER_CUDA_GRAPHS=0 times every step)";
  else
    device += ", steps enqueued one by one, timed by events between them";
  return formatProfileReport(prog, recorder.profile(), recorder.firstOnly(),
                             device, topKernels);
}

} // namespace cuda

absl::StatusOr<std::string> pickCudaImage(std::string_view module, int major,
                                          int minor, bool *isPtx) {
  sabi::CudaModule parsed;
  if (!parsed.ParseFromArray(module.data(), static_cast<int>(module.size())))
    return sinter::InvalidArgumentError(
        SINTER_HERE, "the binary's CUDA module does not parse");
  int want = major * 10 + minor;
  const sabi::CudaImage *older = nullptr;
  int olderNumber = -1;
  std::vector<std::string> chips;
  for (const sabi::CudaImage &image : parsed.images()) {
    chips.push_back(image.chip());
    std::string_view digits = image.chip();
    if (digits.substr(0, 3) != "sm_")
      continue;
    digits.remove_prefix(3);
    bool archSpecific = !digits.empty() && digits.back() == 'a';
    if (archSpecific)
      digits.remove_suffix(1);
    int number = std::atoi(std::string(digits).c_str());
    if (number == want && !image.cubin().empty()) {
      *isPtx = false;
      return image.cubin();
    }
    // PTX of an older architecture runs on newer ones, unless it uses
    // architecture-specific (sm_90a) features.
    if (number < want && !archSpecific && number > olderNumber &&
        !image.ptx().empty()) {
      older = &image;
      olderNumber = number;
    }
  }
  if (older) {
    *isPtx = true;
    std::string ptx = older->ptx();
    if (ptx.empty() || ptx.back() != '\0')
      ptx.push_back('\0');
    return ptx;
  }
  return sinter::FailedPreconditionError(
      SINTER_HERE,
      absl::StrFormat("the kernels were compiled for %s, which this GPU "
                      "(sm_%d%d) cannot run; compile with "
                      "--cuda-arch=sm_%d%d",
                      chips.empty() ? "no architecture"
                                    : absl::StrJoin(chips, ", "),
                      major, minor, major, minor));
}

absl::StatusOr<std::unique_ptr<Executor>>
createCudaExecutor(StepProgram program, std::string_view cudaModule,
                   const ExecutorOptions &options) {
  SINTER_ASSIGN_OR_RETURN(
      std::unique_ptr<cuda::CudaExecutor> ex,
      cuda::CudaExecutor::create(std::move(program), cudaModule, options));
  return std::unique_ptr<Executor>(std::move(ex));
}

} // namespace sinter::exec

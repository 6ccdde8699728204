//===- Matmul.cpp - batched matmul through oneDNN -------------------------===//
//
// The oneDNN backend of runtime/Exec/Matmul.h (the shape checks, triangle
// blocks and reference are in MatmulShapes.cpp).
//
// How a matmul step becomes oneDNN primitives (all decided in bind(), at
// program load):
//
//   1. Canonical batch. Out batch axes of size 1 are dropped, and adjacent
//      axes are merged when lhs and rhs broadcast the same way along both
//      (row-major storage makes such runs one longer axis). [2,3,M,K] x
//      [K,N] becomes one axis of 6 with rhs broadcast.
//   2. Folding into M. When rhs is broadcast along every remaining axis and
//      lhs is not transposed, lhs's batch rows are contiguous [B*M, K], so
//      the whole step is one 2-d GEMM with a taller M: the common
//      "activations [B,T,C] @ weight [C,D]" case, and the shape oneDNN's
//      kernels like best.
//   3. Otherwise one primitive of rank 2 + (canonical batch rank), with
//      broadcast axes given size 1 (oneDNN matmul broadcasts them) and the
//      transposes expressed as strides, so nothing is ever copied.
//      If oneDNN rejects a batch of rank > 1 (or the tests force it), the
//      fallback loops over every out batch index with one 2-d primitive,
//      moving the memory handles between calls.
//
// Epilogue: oneDNN 2.x applies the output scale to (acc + bias), not to acc
// alone (checked against 2.6.3: scale 2, bias 10 gives 2*(1+10)), so with
// alpha != 1 the bias becomes a binary-add post-op after the scale instead
// of the primitive's own bias. The activation is an eltwise post-op.
//
// Half precision: bf16 operands go to oneDNN as they are (AMX or
// avx512_bf16 kernels, f32 accumulation, the epilogue in f32, dst rounded
// once). Where the library has no kernel for the type (f16 on oneDNN 2.6),
// bind() falls back to widening: the operands are converted into f32
// scratch before each run, the f32 primitive runs, and out is rounded back,
// which computes the same products (every half value is exact in f32).
// An f32 out from half operands (a weight gradient) is dst and bias of type
// f32 in the same primitive, or the widened path's f32 out written directly.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/Matmul.h"

#include "runtime/Support/Status.h"

#include "abi/HalfFloat.h"

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <immintrin.h>
#include <string>
#include <unordered_map>

using namespace sinter::exec;
namespace sabi = sinter::abi;

namespace {
using dnnl::memory;
using Dims = memory::dims;

enum class BiasMode { None, Native, PostOp };

/// Everything a primitive depends on; also its cache key.
struct PrimitiveSpec {
  Dims srcDims, srcStrides, weiDims, weiStrides, dstDims, dstStrides;
  BiasMode bias = BiasMode::None;
  float alpha = 1.0f;
  Activation activation = sabi::MatmulStep::none;
  memory::data_type type = memory::data_type::f32;    // of src and weights
  memory::data_type dstType = memory::data_type::f32; // of dst and bias

  Dims biasDims() const {
    Dims d(dstDims.size(), 1);
    d.back() = dstDims.back();
    return d;
  }
  std::string key() const {
    return absl::StrFormat(
        "%s/%s|%s/%s|%s/%s|b%d|a%a|%s|t%d>%d", absl::StrJoin(srcDims, ","),
        absl::StrJoin(srcStrides, ","), absl::StrJoin(weiDims, ","),
        absl::StrJoin(weiStrides, ","), absl::StrJoin(dstDims, ","),
        absl::StrJoin(dstStrides, ","), static_cast<int>(bias), alpha,
        sabi::activationName(activation), static_cast<int>(type),
        static_cast<int>(dstType));
  }
};

/// Dense row-major strides of `dims`.
Dims stridesFor(const Dims &dims) {
  Dims strides(dims.size());
  int64_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = step;
    step *= dims[i];
  }
  return strides;
}

/// Strides of the logical [..., R, C] matrix stack `dims` when it is stored
/// dense as [..., C, R] (a transposed operand): the stored strides with the
/// two trailing entries swapped.
Dims transposedStridesFor(const Dims &dims) {
  size_t r = dims.size();
  Dims stored = dims;
  std::swap(stored[r - 1], stored[r - 2]);
  Dims strides = stridesFor(stored);
  std::swap(strides[r - 1], strides[r - 2]);
  return strides;
}

absl::Status dnnlError(const dnnl::error &e, std::string_view what) {
  return sinter::InternalError(
      SINTER_HERE, absl::StrFormat("oneDNN %s failed: %s (status %d)", what,
                                   e.what(), static_cast<int>(e.status)));
}

/// Calls the primitive through the C API with a prebuilt argument array:
/// the C++ execute() builds a vector from an unordered_map on every call.
class DnnlBound final : public BoundMatmul {
public:
  dnnl::stream stream;
  dnnl::matmul primitive;
  std::vector<memory> memories; // keeps the handles alive
  std::vector<dnnl_exec_arg_t> args;
  // Fallback loop: per out batch index, byte offsets of lhs/rhs/out.
  memory srcMem, weiMem, dstMem;
  const char *lhs = nullptr, *rhs = nullptr;
  char *out = nullptr;
  std::vector<std::array<int64_t, 3>> loopOffsets;
  std::string planText;

  absl::Status run() override {
    if (loopOffsets.empty())
      return execute();
    for (const auto &[l, r, o] : loopOffsets) {
      dnnl_memory_set_data_handle(srcMem.get(), const_cast<char *>(lhs + l));
      dnnl_memory_set_data_handle(weiMem.get(), const_cast<char *>(rhs + r));
      dnnl_memory_set_data_handle(dstMem.get(), out + o);
      SINTER_RETURN_IF_ERROR(execute());
    }
    return absl::OkStatus();
  }
  std::string_view plan() const override { return planText; }

private:
  absl::Status execute() {
    dnnl_status_t s =
        dnnl_primitive_execute(primitive.get(), stream.get(),
                               static_cast<int>(args.size()), args.data());
    if (s == dnnl_success)
      s = dnnl_stream_wait(stream.get());
    if (s != dnnl_success)
      return sinter::InternalError(
          SINTER_HERE,
          absl::StrFormat("oneDNN matmul execution failed (status %d)",
                          static_cast<int>(s)));
    return absl::OkStatus();
  }
};

/// For shapes oneDNN cannot take (a zero-sized axis): the reference.
class ReferenceBound final : public BoundMatmul {
public:
  MatmulDesc desc;
  const void *lhs, *rhs, *bias;
  void *out;
  ReferenceBound(MatmulDesc desc, const void *lhs, const void *rhs,
                 const void *bias, void *out)
      : desc(std::move(desc)), lhs(lhs), rhs(rhs), bias(bias), out(out) {}
  absl::Status run() override {
    return referenceMatmul(desc, lhs, rhs, bias, out);
  }
  std::string_view plan() const override { return "reference (empty axis)"; }
};

/// A triangular matmul (MatmulDesc::triangle) as blocks along the diagonal:
/// each block a primitive over views of the operands (offsets and the
/// whole matrices' strides, nothing copied) that leaves out the products a
/// triangle makes zero, or the outputs nobody reads; those outputs are
/// written as 0 instead, so out never holds stale bytes.
class BlockedBound final : public BoundMatmul {
public:
  std::vector<std::unique_ptr<BoundMatmul>> blocks;
  /// out_lower: in every matrix, rows [r0, r1) get 0 from column c on.
  struct Zeros {
    int64_t r0, r1, c;
  };
  std::vector<Zeros> zeros;
  char *out = nullptr;
  int64_t matrices = 1, m = 0, n = 0, elementBytes = 4;
  std::string planText;

  absl::Status run() override {
    for (auto &block : blocks)
      SINTER_RETURN_IF_ERROR(block->run());
    if (zeros.empty())
      return absl::OkStatus();
    const int64_t count = matrices * static_cast<int64_t>(zeros.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const Zeros &z = zeros[i % zeros.size()];
      char *matrix = out + (i / zeros.size()) * m * n * elementBytes;
      for (int64_t r = z.r0; r < z.r1; ++r)
        std::memset(matrix + (r * n + z.c) * elementBytes, 0,
                    (n - z.c) * elementBytes);
    }
    return absl::OkStatus();
  }
  std::string_view plan() const override { return planText; }
};

/// " bf16", " bf16 to f32": a plan's types, when not all f32.
std::string typeSuffix(const MatmulDesc &desc) {
  std::string text;
  if (desc.dtype != sabi::ElementType::f32)
    text += " " + std::string(sabi::dtypeName(desc.dtype));
  if (desc.outType != desc.dtype)
    text += " to " + std::string(sabi::dtypeName(desc.outType));
  return text;
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// Conversions for the widened path: F16C's vcvtph2ps / vcvtps2ph (round
// to nearest even, subnormals kept) where the CPU has them, chosen at run
// time; the portable bit manipulation otherwise. bf16 is a shift either way.
__attribute__((target("avx,f16c"))) void f16ToF32F16c(const uint16_t *from,
                                                      float *to, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(to + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                 reinterpret_cast<const __m128i *>(from + i))));
  for (; i < n; ++i)
    to[i] = sinter::half::f16BitsToFloat(from[i]);
}

__attribute__((target("avx,f16c"))) void f32ToF16F16c(const float *from,
                                                      uint16_t *to, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(to + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(from + i),
                                     _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i)
    to[i] = sinter::half::floatToF16Bits(from[i]);
}

const bool kHasF16c = __builtin_cpu_supports("f16c");

void widenHalf(sabi::DType type, const void *from, float *to, size_t n) {
  auto *h = static_cast<const uint16_t *>(from);
  if (type == sabi::ElementType::bf16) {
    for (size_t i = 0; i < n; ++i)
      to[i] = sinter::half::bf16BitsToFloat(h[i]);
  } else if (kHasF16c) {
    f16ToF32F16c(h, to, n);
  } else {
    for (size_t i = 0; i < n; ++i)
      to[i] = sinter::half::f16BitsToFloat(h[i]);
  }
}

void narrowHalf(sabi::DType type, const float *from, void *to, size_t n) {
  auto *h = static_cast<uint16_t *>(to);
  if (type == sabi::ElementType::bf16) {
    for (size_t i = 0; i < n; ++i)
      h[i] = sinter::half::floatToBf16Bits(from[i]);
  } else if (kHasF16c) {
    f32ToF16F16c(from, h, n);
  } else {
    for (size_t i = 0; i < n; ++i)
      h[i] = sinter::half::floatToF16Bits(from[i]);
  }
}

/// A half matmul the library has no kernel for: the f32 one on widened
/// copies (see the file's header). An f32 out (and its bias) is the inner
/// matmul's own: out32 and bias32 stay empty and nothing is narrowed.
class WidenedBound final : public BoundMatmul {
public:
  sabi::DType type;
  std::vector<float> lhs32, rhs32, bias32, out32;
  const void *lhs, *rhs, *bias;
  void *out;
  std::unique_ptr<BoundMatmul> inner;
  std::string planText;

  absl::Status run() override {
    widenHalf(type, lhs, lhs32.data(), lhs32.size());
    widenHalf(type, rhs, rhs32.data(), rhs32.size());
    if (!bias32.empty())
      widenHalf(type, bias, bias32.data(), bias32.size());
    SINTER_RETURN_IF_ERROR(inner->run());
    if (!out32.empty())
      narrowHalf(type, out32.data(), out, out32.size());
    return absl::OkStatus();
  }
  std::string_view plan() const override { return planText; }
};

memory::data_type dnnlType(sabi::DType type) {
  switch (type) {
  case sabi::ElementType::bf16:
    return memory::data_type::bf16;
  case sabi::ElementType::f16:
    return memory::data_type::f16;
  default:
    return memory::data_type::f32;
  }
}
} // namespace

struct MatmulBackend::Impl {
  dnnl::engine engine;
  dnnl::stream stream;
  MatmulBackendOptions options;
  std::unordered_map<std::string, dnnl::matmul> cache;

  /// Rows per block of a triangle over a size x size matrix.
  int64_t blockRows(int64_t size) const {
    return options.triangleBlockRows > 0 ? options.triangleBlockRows
                                         : defaultTriangleBlockRows(size);
  }
  /// The primitive bound to four pointers (bias may be null without one).
  absl::StatusOr<std::unique_ptr<DnnlBound>>
  bindSpec(const PrimitiveSpec &spec, const dnnl::matmul &primitive,
           const void *lhs, const void *rhs, const void *bias, void *out);
  /// Whether the whole product runs on an AMX kernel and some block of the
  /// triangle would not (oneDNN 2.6 gives AMX only to dense operands, and a
  /// block is a strided view): then the whole product is faster than the
  /// blocks' share of it (see bindNative), unless an operand stored
  /// transposed is larger than kWholeTransposedBytes a matrix. False when
  /// the blocks are forced (MatmulBackendOptions::triangleBlockRows).
  bool wholeOnAmxOnly(const MatmulDesc &desc, const MatmulGeometry &g,
                      const PrimitiveSpec &whole);
  /// desc with a triangle skipped, `whole` its whole product's spec; an
  /// Unimplemented status when oneDNN takes no block.
  absl::StatusOr<std::unique_ptr<BoundMatmul>>
  bindTriangle(const MatmulDesc &desc, const MatmulGeometry &g,
               const PrimitiveSpec &whole, const void *lhs, const void *rhs,
               void *out);

  absl::StatusOr<dnnl::matmul> primitiveFor(const PrimitiveSpec &spec) {
    std::string key = spec.key();
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    try {
      auto t = spec.type, dt = spec.dstType;
      memory::desc src(spec.srcDims, t, spec.srcStrides);
      memory::desc wei(spec.weiDims, t, spec.weiStrides);
      memory::desc dst(spec.dstDims, dt, spec.dstStrides);
      memory::desc bias(spec.biasDims(), dt, stridesFor(spec.biasDims()));
      dnnl::primitive_attr attr;
      dnnl::post_ops ops;
      if (spec.alpha != 1.0f)
        attr.set_output_scales(0, {spec.alpha});
      if (spec.bias == BiasMode::PostOp)
        ops.append_binary(dnnl::algorithm::binary_add, bias);
      switch (spec.activation) {
      case sabi::MatmulStep::none:
        break;
      case sabi::MatmulStep::relu:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        break;
      case sabi::MatmulStep::gelu_erf:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0, 0);
        break;
      case sabi::MatmulStep::gelu_tanh:
        ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0, 0);
        break;
      }
      attr.set_post_ops(ops);
      dnnl::matmul::desc desc = spec.bias == BiasMode::Native
                                    ? dnnl::matmul::desc(src, wei, bias, dst)
                                    : dnnl::matmul::desc(src, wei, dst);
      dnnl::matmul primitive(dnnl::matmul::primitive_desc(desc, attr, engine));
      cache.emplace(std::move(key), primitive);
      return primitive;
    } catch (const dnnl::error &e) {
      return dnnlError(e, "matmul creation");
    }
  }
};

absl::StatusOr<std::unique_ptr<DnnlBound>>
MatmulBackend::Impl::bindSpec(const PrimitiveSpec &spec,
                              const dnnl::matmul &primitive, const void *lhs,
                              const void *rhs, const void *bias, void *out) {
  auto bound = std::make_unique<DnnlBound>();
  bound->stream = stream;
  bound->primitive = primitive;
  try {
    auto bindArg = [&](int arg, const Dims &dims, const Dims &strides,
                       memory::data_type type, const void *ptr) {
      memory mem(memory::desc(dims, type, strides), engine,
                 const_cast<void *>(ptr));
      bound->memories.push_back(mem);
      bound->args.push_back({arg, mem.get()});
      return mem;
    };
    bound->srcMem =
        bindArg(DNNL_ARG_SRC, spec.srcDims, spec.srcStrides, spec.type, lhs);
    bound->weiMem = bindArg(DNNL_ARG_WEIGHTS, spec.weiDims, spec.weiStrides,
                            spec.type, rhs);
    bound->dstMem =
        bindArg(DNNL_ARG_DST, spec.dstDims, spec.dstStrides, spec.dstType, out);
    Dims biasDims = spec.biasDims();
    if (spec.bias == BiasMode::Native)
      bindArg(DNNL_ARG_BIAS, biasDims, stridesFor(biasDims), spec.dstType,
              bias);
    else if (spec.bias == BiasMode::PostOp)
      bindArg(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, biasDims,
              stridesFor(biasDims), spec.dstType, bias);
  } catch (const dnnl::error &e) {
    return dnnlError(e, "memory creation");
  }
  bound->lhs = static_cast<const char *>(lhs);
  bound->rhs = static_cast<const char *>(rhs);
  bound->out = static_cast<char *>(out);
  return bound;
}

MatmulBackend::MatmulBackend(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
MatmulBackend::~MatmulBackend() = default;

absl::StatusOr<std::unique_ptr<MatmulBackend>>
MatmulBackend::create(const MatmulBackendOptions &options) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    impl->stream = dnnl::stream(impl->engine);
  } catch (const dnnl::error &e) {
    return dnnlError(e, "CPU engine creation");
  }
  impl->options = options;
  return std::unique_ptr<MatmulBackend>(new MatmulBackend(std::move(impl)));
}

std::string MatmulBackend::isa() {
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::all:
    return "all";
  case dnnl::cpu_isa::avx512_mic:
    return "avx512_mic";
  case dnnl::cpu_isa::avx512_mic_4ops:
    return "avx512_mic_4ops";
  case dnnl::cpu_isa::sse41:
    return "sse41";
  case dnnl::cpu_isa::avx:
    return "avx";
  case dnnl::cpu_isa::avx2:
    return "avx2";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  }
  return "unknown";
}

int64_t MatmulBackend::numCachedPrimitives() const {
  return static_cast<int64_t>(impl->cache.size());
}

absl::StatusOr<std::unique_ptr<BoundMatmul>>
MatmulBackend::bind(const MatmulDesc &desc, const void *lhs, const void *rhs,
                    const void *bias, void *out) {
  SINTER_ASSIGN_OR_RETURN(const MatmulGeometry g, analyzeMatmul(desc));
  if (desc.hasAux || desc.activation == sabi::MatmulStep::dgelu_tanh)
    return sinter::UnimplementedError(
        SINTER_HERE,
        absl::StrFormat("activation %s%s is one of cuBLASLt's training "
                        "epilogues, which oneDNN has not; only the CUDA "
                        "target asks for it",
                        sabi::activationName(desc.activation),
                        desc.hasAux ? " with aux" : ""));
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.batchCount == 0)
    return std::make_unique<ReferenceBound>(desc, lhs, rhs,
                                            desc.hasBias ? bias : nullptr, out);
  absl::StatusOr<std::unique_ptr<BoundMatmul>> bound =
      bindNative(desc, g, lhs, rhs, bias, out);
  if (bound.ok() || desc.dtype == sabi::ElementType::f32)
    return bound;
  // No kernel for the half type: widen.
  auto widened = std::make_unique<WidenedBound>();
  widened->type = desc.dtype;
  widened->lhs32.resize(elementCount(desc.lhsShape));
  widened->rhs32.resize(elementCount(desc.rhsShape));
  const bool narrowOut = desc.outType != sabi::ElementType::f32;
  if (narrowOut)
    widened->out32.resize(elementCount(desc.outShape));
  if (desc.hasBias && narrowOut)
    widened->bias32.resize(elementCount(desc.biasShape));
  widened->lhs = lhs;
  widened->rhs = rhs;
  widened->bias = desc.hasBias ? bias : nullptr;
  widened->out = out;
  MatmulDesc wide = desc;
  wide.dtype = wide.outType = sabi::ElementType::f32;
  SINTER_ASSIGN_OR_RETURN(
      widened->inner,
      bindNative(wide, g, widened->lhs32.data(), widened->rhs32.data(),
                 narrowOut ? widened->bias32.data() : bias,
                 narrowOut ? widened->out32.data() : out));
  widened->planText = absl::StrFormat(
      "%s (widened from %s%s)", widened->inner->plan(),
      sabi::dtypeName(desc.dtype), narrowOut ? "" : ", f32 out");
  return std::unique_ptr<BoundMatmul>(std::move(widened));
}

absl::StatusOr<std::unique_ptr<BoundMatmul>>
MatmulBackend::bindNative(const MatmulDesc &desc, const MatmulGeometry &g,
                          const void *lhs, const void *rhs, const void *bias,
                          void *out) {

  // 1. Canonical batch: drop size-1 out axes, merge runs that broadcast
  // alike. A merged axis is {size, lhs broadcast, rhs broadcast}.
  struct Axis {
    int64_t size;
    bool lhsBroadcast, rhsBroadcast;
  };
  std::vector<Axis> axes;
  for (size_t i = 0; i < g.outBatch.size(); ++i) {
    if (g.outBatch[i] == 1)
      continue;
    bool lb = g.lhsBatch[i] == 1, rb = g.rhsBatch[i] == 1;
    if (!axes.empty() && axes.back().lhsBroadcast == lb &&
        axes.back().rhsBroadcast == rb)
      axes.back().size *= g.outBatch[i];
    else
      axes.push_back({g.outBatch[i], lb, rb});
  }
  // 2. Fold into M when rhs is shared by the whole batch.
  int64_t m = g.m;
  bool rhsShared = std::all_of(axes.begin(), axes.end(),
                               [](const Axis &a) { return a.rhsBroadcast; });
  if (rhsShared && !desc.transposeLhs) {
    for (const Axis &a : axes)
      m *= a.size;
    axes.clear();
  }

  PrimitiveSpec spec;
  spec.alpha = desc.alpha;
  spec.activation = desc.activation;
  spec.type = dnnlType(desc.dtype);
  spec.dstType = dnnlType(desc.outType);
  spec.bias = !desc.hasBias        ? BiasMode::None
              : desc.alpha == 1.0f ? BiasMode::Native
                                   : BiasMode::PostOp;
  auto makeSpec = [&](const std::vector<Axis> &batch, int64_t rows) {
    Dims src, wei, dst;
    for (const Axis &a : batch) {
      src.push_back(a.lhsBroadcast ? 1 : a.size);
      wei.push_back(a.rhsBroadcast ? 1 : a.size);
      dst.push_back(a.size);
    }
    src.insert(src.end(), {rows, g.k});
    wei.insert(wei.end(), {g.k, g.n});
    dst.insert(dst.end(), {rows, g.n});
    // The transposes are only strides: nothing is copied.
    spec.srcStrides =
        desc.transposeLhs ? transposedStridesFor(src) : stridesFor(src);
    spec.weiStrides =
        desc.transposeRhs ? transposedStridesFor(wei) : stridesFor(wei);
    spec.srcDims = src;
    spec.weiDims = wei;
    spec.dstDims = dst;
    spec.dstStrides = stridesFor(dst);
  };

  // 3. A triangle skipped: blocks along the diagonal, when each matrix is
  // one (not folded into M) and one primitive takes the whole batch.
  // Unless the whole product gets an AMX kernel that the blocks would not:
  // at T = 256 the blocks do 5/8 of the products, but oneDNN's strided
  // kernel runs them at a half to a third of AMX's rate, so the whole
  // product wins (docs/StepProgram.md, "Causal matmuls").
  const int64_t square = triangleSize(desc, g);
  std::string wholeWhy;
  if (desc.triangle != sabi::MatmulStep::full && m == g.m && axes.size() <= 1 &&
      !impl->options.forceBatchLoop && impl->blockRows(square) < square) {
    makeSpec(axes, m);
    if (impl->wholeOnAmxOnly(desc, g, spec)) {
      wholeWhy = absl::StrFormat(", %s computed whole (AMX takes no block)",
                                 sabi::triangleName(desc.triangle));
    } else {
      absl::StatusOr<std::unique_ptr<BoundMatmul>> blocked =
          impl->bindTriangle(desc, g, spec, lhs, rhs, out);
      if (blocked.ok() || !absl::IsUnimplemented(blocked.status()))
        return blocked;
      // oneDNN took no view: the whole product.
    }
  }

  // 4. One primitive, unless the batch has rank > 1 and oneDNN (or the
  // test option) says no.
  absl::StatusOr<dnnl::matmul> primitive =
      sinter::UnimplementedError(SINTER_HERE, "batch loop forced");
  bool loop = false;
  if (axes.size() <= 1 || !impl->options.forceBatchLoop) {
    makeSpec(axes, m);
    primitive = impl->primitiveFor(spec);
  }
  if (!primitive.ok() && axes.size() > 1) {
    loop = true;
    makeSpec({}, g.m);
    primitive = impl->primitiveFor(spec);
  }
  if (!primitive.ok())
    return sinter::addFrame(SINTER_HERE, primitive.status());
  SINTER_ASSIGN_OR_RETURN(
      std::unique_ptr<DnnlBound> bound,
      impl->bindSpec(spec, *primitive, lhs, rhs, bias, out));
  if (loop) {
    const int64_t e = sabi::elementBytes(desc.dtype),
                  eo = sabi::elementBytes(desc.outType);
    for (int64_t b = 0; b < g.batchCount; ++b) {
      auto [l, r] = g.batchOffsets(b);
      bound->loopOffsets.push_back(
          {l * g.m * g.k * e, r * g.k * g.n * e, b * g.m * g.n * eo});
    }
    bound->planText = absl::StrFormat("loop %d x 2d M=%d K=%d N=%d",
                                      g.batchCount, g.m, g.k, g.n);
  } else {
    bound->planText =
        absl::StrFormat("%dd %s x %s", spec.dstDims.size(),
                        shapeText(spec.srcDims), shapeText(spec.weiDims));
  }
  bound->planText += wholeWhy + typeSuffix(desc);
  return std::unique_ptr<BoundMatmul>(std::move(bound));
}

/// The largest transposed operand matrix (bytes) with which a triangle is
/// computed whole on AMX (MatmulBackend::Impl::wholeOnAmxOnly).
constexpr int64_t kWholeTransposedBytes = 128 << 10;

/// whole's spec cut down to block b (the whole matrices' strides kept).
static PrimitiveSpec blockSpec(const PrimitiveSpec &whole,
                               const TriangleBlock &b) {
  const size_t r = whole.dstDims.size();
  PrimitiveSpec spec = whole;
  spec.srcDims[r - 2] = b.r1 - b.r0;
  spec.srcDims[r - 1] = b.k1 - b.k0;
  spec.weiDims[r - 2] = b.k1 - b.k0;
  spec.weiDims[r - 1] = b.c1 - b.c0;
  spec.dstDims[r - 2] = b.r1 - b.r0;
  spec.dstDims[r - 1] = b.c1 - b.c0;
  return spec;
}

/// oneDNN's name for the kernel behind `primitive`, e.g.
/// "brg:avx512_core_amx_bf16" or "gemm:jit".
static std::string kernelName(const dnnl::matmul &primitive) {
  const_dnnl_primitive_desc_t pd = nullptr;
  const char *name = nullptr;
  if (dnnl_primitive_get_primitive_desc(primitive.get(), &pd) !=
          dnnl_success ||
      dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) !=
          dnnl_success ||
      name == nullptr)
    return "";
  return name;
}

bool MatmulBackend::Impl::wholeOnAmxOnly(const MatmulDesc &desc,
                                         const MatmulGeometry &g,
                                         const PrimitiveSpec &whole) {
  if (options.triangleBlockRows > 0)
    return false;
  // AMX reads an operand that is stored transposed through a copy of the
  // whole matrix, which a block mostly skips: past 128 KiB a matrix (a
  // 256 x 256 bf16 one) the blocks won (GPT-2's P^T dO at T = 1024).
  const int64_t e = sabi::elementBytes(desc.dtype);
  if ((desc.transposeLhs && g.m * g.k * e > kWholeTransposedBytes) ||
      (desc.transposeRhs && g.k * g.n * e > kWholeTransposedBytes))
    return false;
  auto onAmx = [&](const PrimitiveSpec &spec) {
    absl::StatusOr<dnnl::matmul> primitive = primitiveFor(spec);
    return primitive.ok() &&
           absl::StrContains(kernelName(*primitive), "_amx");
  };
  if (!onAmx(whole))
    return false;
  const std::vector<TriangleBlock> blocks =
      triangleBlocks(desc, g, blockRows(triangleSize(desc, g)));
  return !std::all_of(blocks.begin(), blocks.end(),
                      [&](const TriangleBlock &b) {
                        return onAmx(blockSpec(whole, b));
                      });
}

absl::StatusOr<std::unique_ptr<BoundMatmul>> MatmulBackend::Impl::bindTriangle(
    const MatmulDesc &desc, const MatmulGeometry &g, const PrimitiveSpec &whole,
    const void *lhs, const void *rhs, void *out) {
  const int64_t step = blockRows(triangleSize(desc, g));
  const int64_t e = sabi::elementBytes(desc.dtype),
                eo = sabi::elementBytes(desc.outType);
  const size_t r = whole.dstDims.size();
  auto blocked = std::make_unique<BlockedBound>();
  blocked->out = static_cast<char *>(out);
  blocked->matrices = g.batchCount;
  blocked->m = g.m;
  blocked->n = g.n;
  blocked->elementBytes = eo;
  double products = 0;
  for (const TriangleBlock &b : triangleBlocks(desc, g, step)) {
    const auto [r0, r1, k0, k1, c0, c1, zeroFrom] = b;
    if (zeroFrom < g.n)
      blocked->zeros.push_back({r0, r1, zeroFrom});
    const PrimitiveSpec spec = blockSpec(whole, b);
    absl::StatusOr<dnnl::matmul> primitive = primitiveFor(spec);
    if (!primitive.ok())
      return sinter::UnimplementedError(
          SINTER_HERE, std::string(primitive.status().message()));
    auto at = [r](const Dims &strides, int64_t row, int64_t col) {
      return strides[r - 2] * row + strides[r - 1] * col;
    };
    SINTER_ASSIGN_OR_RETURN(
        std::unique_ptr<DnnlBound> block,
        bindSpec(
            spec, *primitive,
            static_cast<const char *>(lhs) + at(whole.srcStrides, r0, k0) * e,
            static_cast<const char *>(rhs) + at(whole.weiStrides, k0, c0) * e,
            nullptr,
            static_cast<char *>(out) + at(whole.dstStrides, r0, c0) * eo));
    products += double(r1 - r0) * (k1 - k0) * (c1 - c0);
    blocked->blocks.push_back(std::move(block));
  }
  blocked->planText = absl::StrFormat(
      "%dd %s x %s, %s in %d blocks (%.1f%% of the products)",
      whole.dstDims.size(), shapeText(whole.srcDims), shapeText(whole.weiDims),
      sabi::triangleName(desc.triangle), blocked->blocks.size(),
      100.0 * products / (double(g.m) * g.k * g.n));
  blocked->planText += typeSuffix(desc);
  return std::unique_ptr<BoundMatmul>(std::move(blocked));
}

//===- CudaCommKernels.cpp - PTX of the gradients' wire conversions ------===//
//
// A bucket whose gradients travel between ranks in bf16 or f16
// (`data_parallel.grad_comm_dtype`, docs/Distributed.md) is rounded to the
// half type on the device before NCCL sums it, and widened back (with a
// mean's 1/world-size) after, as the CPU's communication thread does. Those
// are the runtime's own kernels, not the model's: they must exist for any
// program, and the runtime has no compiler, so they are written here as PTX
// text (four grid-stride loops of a few instructions), which the driver
// compiles at load like any PTX. `SinterCudaExecutorTest` assembles them
// with ptxas for sm_80 and sm_90.
//
//   sinter_narrow_{bf16,f16}(const float *in, u16 *out, u64 n)
//       out[i] = round-to-nearest-even(in[i])
//   sinter_widen_{bf16,f16}(const u16 *in, float *out, u64 n, float scale)
//       out[i] = float(in[i]) * scale
//
// bf16 widens by a shift (exact); cvt.f32.bf16 would need sm_90.
//
//===----------------------------------------------------------------------===//

#include "runtime/Exec/CudaExecutor.h"

#include "absl/strings/str_replace.h"

namespace sinter::exec {

namespace {

// The grid-stride loop around BODY, which converts element %rd4 (the
// index; %rd1 and %rd2 are in and out).
constexpr const char *kLoop = R"(
.visible .entry NAME(.param .u64 p_in, .param .u64 p_out, .param .u64 p_n PARAMS)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<12>;
    .reg .f32 %f<3>;
    .reg .b16 %h<2>;
    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_out];
    ld.param.u64 %rd3, [p_n];
    LOADS
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd4, %r1, %r2;
    cvt.u64.u32 %rd5, %r3;
    add.u64 %rd4, %rd4, %rd5;
    mul.wide.u32 %rd6, %r4, %r2;
LOOP:
    setp.ge.u64 %p1, %rd4, %rd3;
    @%p1 bra DONE;
BODY
    add.u64 %rd4, %rd4, %rd6;
    bra LOOP;
DONE:
    ret;
}
)";

constexpr const char *kNarrow = R"(
    shl.b64 %rd7, %rd4, 2;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.f32 %f1, [%rd8];
    cvt.rn.HALF.f32 %h1, %f1;
    shl.b64 %rd9, %rd4, 1;
    add.u64 %rd10, %rd2, %rd9;
    st.global.b16 [%rd10], %h1;)";

constexpr const char *kWiden = R"(
    shl.b64 %rd7, %rd4, 1;
    add.u64 %rd8, %rd1, %rd7;
    ld.global.b16 %h1, [%rd8];
WIDEN
    mul.f32 %f1, %f1, %f2;
    shl.b64 %rd9, %rd4, 2;
    add.u64 %rd10, %rd2, %rd9;
    st.global.f32 [%rd10], %f1;)";

constexpr const char *kWidenBf16 = R"(    cvt.u32.u16 %r5, %h1;
    shl.b32 %r5, %r5, 16;
    mov.b32 %f1, %r5;)";

constexpr const char *kWidenF16 = "    cvt.f32.f16 %f1, %h1;";

std::string entry(const char *name, const char *body, const char *params,
                  const char *loads) {
  return absl::StrReplaceAll(kLoop, {{"NAME", name},
                                     {"PARAMS", params},
                                     {"LOADS", loads},
                                     {"BODY", body}});
}

} // namespace

std::string commConversionPtx() {
  std::string ptx = ".version 8.0\n.target sm_80\n.address_size 64\n";
  for (auto [half, name] : {std::pair{"bf16", "sinter_narrow_bf16"},
                            {"f16", "sinter_narrow_f16"}})
    ptx += entry(name, absl::StrReplaceAll(kNarrow, {{"HALF", half}}).c_str(),
                 "", "");
  for (auto [widen, name] : {std::pair{kWidenBf16, "sinter_widen_bf16"},
                             {kWidenF16, "sinter_widen_f16"}})
    ptx += entry(name, absl::StrReplaceAll(kWiden, {{"WIDEN", widen}}).c_str(),
                 ", .param .f32 p_scale", "ld.param.f32 %f2, [p_scale];");
  return ptx;
}

} // namespace sinter::exec

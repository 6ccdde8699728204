//===- ScheduleBase.td - the sched dialect and its types -----------------===//
//
// sched is the scheduled, buffer-assigned form of a training step: one total
// order of kernel launches, library calls, copies and collectives over typed
// views of slabs at static byte offsets. The spec with numbered constraints
// is docs/dialects/sched.md.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_DIALECTS_SCHEDULE_SCHEDULEBASE_TD
#define SINTER_DIALECTS_SCHEDULE_SCHEDULEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Schedule_Dialect : Dialect {
  let name = "sched";
  let cppNamespace = "::sinter::sched";
  let summary = "The scheduled step: launches and calls over slab views";
  let description = [{
    A `sched.program` is what the runtime runs for one step, written as IR:
    the slabs it allocates, a typed view for every buffer at its static
    offset, the arguments and results by name, and the steps in the one
    order they run in: `sched.launch` of a kernel (a `sched.kernel` holding
    the fused region's sgraph ops), `sched.matmul` (a library call with its
    epilogue), `sched.copy`, and asynchronous collectives as a
    `*_start` -> `!sched.token` -> `*_done` pair. Memory reuse is visible:
    two views may share bytes only when their lives do not overlap or one
    declares that it aliases the other. The spec is
    `docs/dialects/sched.md`.
  }];
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::sinter::sgraph::SGraphDialect"];
}

class Sched_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Schedule_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Sched_SlabType : Sched_Type<"Slab", "slab"> {
  let summary = "A slab: one contiguous block of bytes the runtime allocates";
  let description = [{
    The value of a `sched.slab` op. Views cut typed buffers out of it.

    ```mlir
    %arena = sched.slab "arena" size 1048576 : !sched.slab
    ```
  }];
}

def Sched_BufferType : Sched_Type<"Buffer", "buffer"> {
  let summary = "A typed, row-major, contiguous view of a slab's bytes";
  let description = [{
    A statically shaped buffer: `!sched.buffer<8x256xf32>`, or
    `!sched.buffer<i64>` for a scalar. Elements are row-major and
    contiguous; an `i1` element takes one byte. The element type is one of
    the step program's dtypes (f32, f64, f16, bf16, i64, i32, i8, i1).
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    int64_t getNumElements() const;
    /// Bytes of the buffer (elements x element bytes).
    int64_t getBytes() const;
    /// The tensor type of the same shape and element type.
    mlir::RankedTensorType getTensorType() const;
    static BufferType get(mlir::RankedTensorType tensor);
  }];
}

def Sched_TokenType : Sched_Type<"Token", "token"> {
  let summary = "The handle of an asynchronous collective in flight";
  let description = [{
    Made by a collective's `*_start` op and used exactly once, by the
    matching `*_done` op.
  }];
}

def Sched_Buffer : Type<CPred<"::llvm::isa<::sinter::sched::BufferType>($_self)">,
                        "sched buffer", "::sinter::sched::BufferType">;

#endif // SINTER_DIALECTS_SCHEDULE_SCHEDULEBASE_TD

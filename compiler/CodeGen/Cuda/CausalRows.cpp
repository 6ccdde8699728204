//===- CausalRows.cpp - row kernels that stop at a causal diagonal --------===//
//
// KernelBuilder::causalRows: whether a row kernel under a causal mask it
// computes knows every value past each row's diagonal, and what they are
// (docs/Cuda.md, "Causal rows"). emitCudaRows then reads and computes each
// row only up to its diagonal and fills the rest.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cpu/KernelBuilder.h"
#include "passes/CausalProver.h"

#include <cmath>

namespace sinter::codegen::detail {

std::optional<KernelBuilder::CausalRows> KernelBuilder::causalRows() {
  const size_t rank = space.size();
  if (!anyReduce || rank < 2 || !isReductionDim[rank - 1] ||
      isReductionDim[rank - 2] || space[rank - 1] != space[rank - 2])
    return std::nullopt;
  for (size_t p = 0; p + 1 < rank; ++p)
    if (isReductionDim[p])
      return std::nullopt;
  bool masked = llvm::any_of(members, [&](Operation *m) {
    return isa<CausalMaskOp>(m) && shapeOf(m->getResult(0)).size() == 2;
  });
  if (!masked)
    return std::nullopt;

  // What each value is past the diagonal: a constant, one value for the
  // whole row (a reduction's result, a per-row input), or anything.
  struct Known {
    enum { Any, Row, Const } kind = Any;
    double c = 0;
  };
  DenseMap<Value, Known> at;
  auto isRow = [&](ArrayRef<int64_t> shape) {
    return shape.empty() || shape.back() == 1;
  };
  // Inputs proved 0 above the diagonal (sinter-causal-kernel-inputs), read
  // whole: 0 past it.
  llvm::SmallDenseSet<Value, 4> zeroInputs;
  if (auto zeros = src.op->getAttrOfType<DenseI64ArrayAttr>(causal::kZerosAttr))
    for (int64_t i : zeros.asArrayRef())
      if (i >= 0 && i < (int64_t)src.body->getNumArguments() &&
          shapeOf(src.body->getArgument(i)) == ArrayRef<int64_t>(space))
        zeroInputs.insert(src.body->getArgument(i));
  auto known = [&](Value v) -> Known {
    if (auto it = at.find(v); it != at.end())
      return it->second;
    if (zeroInputs.contains(v))
      return {Known::Const, 0};
    if (auto c = v.getDefiningOp<ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (dense && dense.isSplat()) {
        if (isa<FloatType>(dense.getElementType()))
          return {Known::Const,
                  dense.getSplatValue<APFloat>().convertToDouble()};
        if (isa<IntegerType>(dense.getElementType()))
          return {Known::Const,
                  (double)dense.getSplatValue<APInt>().getSExtValue()};
      }
    }
    return isRow(shapeOf(v)) ? Known{Known::Row} : Known{Known::Any};
  };
  auto constant = [](double c) { return Known{Known::Const, c}; };
  auto isConst = [](Known k, double c) {
    return k.kind == Known::Const && k.c == c;
  };
  auto finite = [](Known k) {
    return k.kind != Known::Const || std::isfinite(k.c);
  };
  for (Operation *m : members) {
    if (m->getNumResults() != 1)
      return std::nullopt;
    Value r = m->getResult(0);
    SmallVector<Known> in;
    for (Value v : m->getOperands())
      in.push_back(known(v));
    Known out;
    if (isa<CausalMaskOp>(m)) {
      out = constant(0); // false: past the diagonal
    } else if (isa<ReduceMaxOp>(m)) {
      if (!isConst(in[0], -INFINITY))
        return std::nullopt;
      out.kind = Known::Row;
    } else if (isa<ReduceSumOp>(m)) {
      if (!isConst(in[0], 0))
        return std::nullopt;
      out.kind = Known::Row;
    } else if (isRow(shapeOf(r)) && rank > 0 && shapeOf(r).size() == rank) {
      out.kind = Known::Row; // a row op of a later phase
    } else if (llvm::all_of(in, [](Known k) { return k.kind == Known::Row; }) &&
               !isa<CausalMaskOp, DropoutOp>(m)) {
      out.kind = Known::Any; // computed along the row: not known here
    } else if (isa<SelectOp>(m)) {
      if (in[0].kind == Known::Const)
        out = in[0].c != 0 ? in[1] : in[2];
    } else if (isa<CastOp>(m)) {
      // Values every float type holds exactly.
      if (in[0].kind == Known::Const && isa<FloatType>(elementOf(r)) &&
          (in[0].c == 0 || in[0].c == 1 || std::isinf(in[0].c)))
        out = in[0];
    } else if (isa<ExpOp>(m)) {
      if (isConst(in[0], -INFINITY))
        out = constant(0);
      else if (isConst(in[0], 0))
        out = constant(1);
    } else if (isa<NegOp>(m)) {
      if (in[0].kind == Known::Const)
        out = constant(-in[0].c);
    } else if (isa<MulOp>(m)) {
      if (in[0].kind == Known::Const && in[1].kind == Known::Const)
        out = constant(in[0].c * in[1].c);
      else if ((isConst(in[0], 0) && finite(in[1])) ||
               (isConst(in[1], 0) && finite(in[0])))
        out = constant(0);
    } else if (isa<DivOp>(m)) {
      if (isConst(in[0], 0) &&
          (in[1].kind == Known::Row ||
           (in[1].kind == Known::Const && in[1].c != 0 && finite(in[1]))))
        out = constant(0);
    } else if (isa<AddOp, SubOp>(m)) {
      double sign = isa<SubOp>(m) ? -1 : 1;
      if (in[0].kind == Known::Const && in[1].kind == Known::Const)
        out = constant(in[0].c + sign * in[1].c);
      else if (in[0].kind == Known::Const && std::isinf(in[0].c) &&
               finite(in[1]))
        out = in[0];
      else if (in[1].kind == Known::Const && std::isinf(in[1].c) &&
               finite(in[0]))
        out = constant(sign * in[1].c);
    } else if (isa<DropoutOp>(m)) {
      if (isConst(in[0], 0))
        out = constant(0);
    }
    at[r] = out;
  }

  CausalRows rows;
  rows.rowDim = (int)rank - 2;
  Operation *yield = src.body->getTerminator();
  for (auto [j, v] : llvm::enumerate(yield->getOperands())) {
    Operation *def = v.getDefiningOp();
    if (def && isa<ReduceSumOp, ReduceMaxOp>(def))
      continue;
    if (shapeOf(v) != ArrayRef<int64_t>(space)) {
      if (def && at.lookup(v).kind == Known::Row)
        continue; // a per-row result
      return std::nullopt;
    }
    Known k = known(v);
    if (readOfYield.count(j) || k.kind != Known::Const ||
        !isa<FloatType>(elementOf(v)))
      return std::nullopt;
    rows.fill[j] = k.c;
  }
  return rows;
}

} // namespace sinter::codegen::detail

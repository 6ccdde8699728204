//===- CudaModule.cpp - the CUDA kernels as one module, compiled ---------===//
//
// The binary phase of the CUDA target after the programs became symbols
// (sinter-lower-step without a kernel table):
//
//   sinter-outline-cuda-kernels  the kernel functions into gpu.module
//                                @sinter_cuda, one #nvvm.target per chip;
//   (MLIR's passes)              the kernels to NVVM, then PTX for each
//                                chip (gpu-module-to-binary, format=isa);
//   sinter-embed-cuda-images     each chip's PTX through ptxas to a cubin,
//                                both into the object as a CudaModule.
//
// ptxas is run here rather than through MLIR's fatbin format so that the
// resource use it reports (registers, spills, shared memory) can be kept
// next to the PTX (`ptx-dir`), and so that a kernel ptxas rejects is an
// error of sinterc, with the kernel's name, not of the GPU machine.
//
//===----------------------------------------------------------------------===//

#include "compiler/CodeGen/Cuda/Passes.h"

#include "abi/Abi.h"
#include "abi/StepProgram.pb.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace sinter::codegen {
#define GEN_PASS_DEF_OUTLINECUDAKERNELSPASS
#define GEN_PASS_DEF_EMBEDCUDAIMAGESPASS
#include "compiler/CodeGen/Cuda/Passes.h.inc"
} // namespace sinter::codegen

using namespace mlir;
using namespace sinter;

namespace {

constexpr llvm::StringLiteral kModuleName = "sinter_cuda";

class OutlineCudaKernelsPass
    : public codegen::impl::OutlineCudaKernelsPassBase<
          OutlineCudaKernelsPass> {
public:
  using OutlineCudaKernelsPassBase::OutlineCudaKernelsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    if (chips.empty()) {
      module.emitError("no CUDA architecture to compile for");
      return signalPassFailure();
    }
    // exp, log, tanh and erf are libdevice's: without it the kernels would
    // call functions no GPU module defines.
    if (libdevice.empty()) {
      module.emitError("no libdevice (nvvm/libdevice/libdevice.10.bc) in ")
          << (toolkit.empty() ? std::string("any CUDA toolkit") : toolkit)
          << ": set CUDA_HOME or --cuda-toolkit to a CUDA toolkit";
      return signalPassFailure();
    }
    SmallVector<Attribute> targets;
    ArrayAttr link;
    if (!libdevice.empty())
      link = b.getStrArrayAttr({libdevice});
    for (const std::string &chip : chips)
      targets.push_back(NVVM::NVVMTargetAttr::get(
          ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip, "+ptx80",
          /*targetFlags=*/nullptr, link));
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = b.create<gpu::GPUModuleOp>(module.getLoc(), kModuleName,
                                                b.getArrayAttr(targets));
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("sched.cuda_block"))
        kernels.push_back(fn);
    b.setInsertionPointToStart(gpuModule.getBody());
    for (func::FuncOp fn : kernels) {
      auto kernel = b.create<gpu::GPUFuncOp>(fn.getLoc(), fn.getName(),
                                             fn.getFunctionType());
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      b.getUnitAttr());
      auto block = fn->getAttrOfType<IntegerAttr>("sched.cuda_block");
      kernel.setKnownBlockSizeAttr(
          b.getDenseI32ArrayAttr({(int32_t)block.getInt(), 1, 1}));
      kernel.getBody().getBlocks().clear();
      kernel.getBody().takeBody(fn.getBody());
      // The block's shared arrays: workgroup attributions.
      SmallVector<memref::AllocaOp> shared;
      kernel.walk([&](memref::AllocaOp a) {
        if (a->hasAttr(codegen::kWorkgroupAttr))
          shared.push_back(a);
      });
      for (memref::AllocaOp a : shared) {
        BlockArgument arg =
            kernel.addWorkgroupAttribution(a.getType(), a.getLoc());
        a.replaceAllUsesWith(arg);
        a.erase();
      }
      kernel.walk([&](func::ReturnOp ret) {
        OpBuilder rb(ret);
        rb.create<gpu::ReturnOp>(ret.getLoc());
        ret.erase();
      });
      fn.erase();
    }
  }
};

/// `ptxas -arch=<chip>` on `ptx`: the cubin, and what ptxas said (-v).
FailureOr<std::pair<std::string, std::string>>
runPtxas(Location loc, StringRef ptxas, StringRef chip, StringRef ptx) {
  llvm::SmallString<128> in, out, log;
  if (llvm::sys::fs::createTemporaryFile("sinter-cuda", "ptx", in) ||
      llvm::sys::fs::createTemporaryFile("sinter-cuda", "cubin", out) ||
      llvm::sys::fs::createTemporaryFile("sinter-cuda", "log", log))
    return emitError(loc, "cannot create a temporary file for ptxas");
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(in);
    llvm::sys::fs::remove(out);
    llvm::sys::fs::remove(log);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return emitError(loc, "cannot write ") << in << ": " << ec.message();
    os << ptx;
  }
  std::string arch = ("-arch=" + chip).str();
  SmallVector<StringRef> args = {ptxas, arch, "-O3", "-v", in, "-o", out};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0,
                                     0, &error);
  std::string said;
  if (auto text = llvm::MemoryBuffer::getFile(log))
    said = (*text)->getBuffer().str();
  if (rc != 0) {
    StringRef first = StringRef(said).trim();
    for (StringRef line : llvm::split(said, '\n'))
      if (line.contains("error")) {
        first = line.trim();
        break;
      }
    return emitError(loc, "ptxas rejects the ")
           << chip << " kernels: " << (first.empty() ? error : first.str());
  }
  auto cubin = llvm::MemoryBuffer::getFile(out);
  if (!cubin)
    return emitError(loc, "ptxas wrote no cubin for ") << chip;
  return std::make_pair((*cubin)->getBuffer().str(), said);
}

class EmbedCudaImagesPass
    : public codegen::impl::EmbedCudaImagesPassBase<EmbedCudaImagesPass> {
public:
  using EmbedCudaImagesPassBase::EmbedCudaImagesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto binary = module.lookupSymbol<gpu::BinaryOp>(kModuleName);
    if (!binary) {
      module.emitError("no gpu.binary @") << kModuleName << " to embed";
      return signalPassFailure();
    }
    Location loc = binary.getLoc();
    std::string ptxas = ptxasPath;
    if (ptxas.empty()) {
      auto found = llvm::sys::findProgramByName("ptxas");
      if (!found) {
        emitError(loc, "no ptxas (the CUDA toolkit's) to compile the "
                       "kernels' PTX with");
        return signalPassFailure();
      }
      ptxas = *found;
    }
    abi::CudaModule images;
    for (Attribute a : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(a);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly) {
        emitError(loc, "expects PTX objects for NVVM targets, got ")
            << object;
        return signalPassFailure();
      }
      StringRef chip = target.getChip();
      std::string ptx = object.getObject().getValue().str();
      while (!ptx.empty() && ptx.back() == '\0')
        ptx.pop_back();
      // Without libdevice linked the PTX calls functions it does not
      // define: the driver would refuse the module at load time.
      for (StringRef line : llvm::split(ptx, '\n')) {
        size_t at = line.find("__nv_");
        if (!line.starts_with(".extern .func") || at == StringRef::npos)
          continue;
        emitError(loc, "the ")
            << chip << " PTX calls libdevice's "
            << line.substr(at).take_until([](char c) { return c == '('; })
            << " but libdevice was not linked (set CUDA_HOME or "
               "--cuda-toolkit)";
        return signalPassFailure();
      }
      FailureOr<std::pair<std::string, std::string>> cubin =
          runPtxas(loc, ptxas, chip, ptx);
      if (failed(cubin))
        return signalPassFailure();
      if (!ptxDir.empty()) {
        auto write = [&](StringRef name, StringRef text) -> LogicalResult {
          llvm::SmallString<128> path(ptxDir);
          llvm::sys::path::append(path, name);
          std::error_code ec = llvm::sys::fs::create_directories(ptxDir);
          llvm::raw_fd_ostream os(path, ec);
          if (ec) {
            emitError(loc, "cannot write ") << path << ": " << ec.message();
            return failure();
          }
          os << text;
          return success();
        };
        if (failed(write((chip + ".ptx").str(), ptx)) ||
            failed(write((chip + ".ptxas.txt").str(), cubin->second)))
          return signalPassFailure();
      }
      abi::CudaImage *image = images.add_images();
      image->set_chip(chip.str());
      image->set_ptx(ptx + '\0');
      image->set_cubin(cubin->first);
    }
    std::string bytes;
    if (!images.SerializeToString(&bytes)) {
      emitError(loc, "cannot serialize the CUDA module");
      return signalPassFailure();
    }
    OpBuilder b(binary);
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
    b.create<LLVM::GlobalOp>(loc, type, /*isConstant=*/true,
                             LLVM::Linkage::External,
                             SINTER_ABI_NAME(SINTER_ABI_CUDA_MODULE),
                             b.getStringAttr(bytes));
    b.create<LLVM::GlobalOp>(loc, b.getI64Type(), /*isConstant=*/true,
                             LLVM::Linkage::External,
                             SINTER_ABI_NAME(SINTER_ABI_CUDA_MODULE_SIZE),
                             b.getI64IntegerAttr(bytes.size()));
    binary.erase();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace

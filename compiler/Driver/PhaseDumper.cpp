//===- PhaseDumper.cpp - sinterc --dump-dir ------------------------------===//

#include "compiler/Driver/PhaseDumper.h"

#include "dialects/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace sinter;

LogicalResult PhaseDumper::prepare() {
  if (dir.empty())
    return success();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitError(UnknownLoc::get(&context))
           << dir << ": cannot create the dump directory: " << ec.message();
  index = "Sinter compilation dump: one file per phase, in order.\n";
  return success();
}

LogicalResult PhaseDumper::dump(ModuleOp module, Phase phase, StringRef what) {
  if (dir.empty())
    return success();
  std::string path = entryPath((phaseName(phase) + ".mlir").str(), what);
  // Dumps are meant to be re-parsed and diffed: locations on, nothing
  // elided.
  OpPrintingFlags flags;
  flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  if (failed(writeFile(path,
                       [&](raw_ostream &os) { module.print(os, flags); })))
    return failure();
  return writeIndex();
}

LogicalResult PhaseDumper::writeFusionReport(ModuleOp module) {
  if (dir.empty())
    return success();
  std::string text;
  llvm::raw_string_ostream os(text);
  module.walk([&](func::FuncOp fn) {
    os << "@" << fn.getName() << "\n";
    for (Operation &op : fn.getBody().front()) {
      if (auto fusion = dyn_cast<sgraph::FusionOp>(op)) {
        os << "  kernel " << fusion.getSymName() << " (" << fusion.getKind()
           << ", " << fusion.getInputs().size() << " inputs, "
           << fusion.getNumResults() << " outputs)\n";
        if (auto why = fusion->getAttrOfType<StringAttr>("sinter.fusion"))
          os << "    " << why.getValue() << "\n";
        for (Operation &inner : fusion.getBody().front())
          if (auto why = inner.getAttrOfType<StringAttr>("sinter.fusion"))
            if (!isa<sgraph::ConstantOp>(inner))
              os << "    " << inner.getName() << ": " << why.getValue()
                 << "\n";
        continue;
      }
      if (auto why = op.getAttrOfType<StringAttr>("sinter.fusion"))
        os << "  " << op.getName() << ": " << why.getValue() << "\n";
    }
  });
  return writeSideFile("fusion.txt",
                       "the fusion decisions: each kernel's ops and why", text);
}

std::string PhaseDumper::sideFile(StringRef name, StringRef what) {
  if (dir.empty())
    return "";
  std::string path = entryPath(name, what);
  return succeeded(writeIndex()) ? path : "";
}

LogicalResult PhaseDumper::writeSideFile(StringRef name, StringRef what,
                                         StringRef text) {
  std::string path = sideFile(name, what);
  return path.empty() ? success() : writeFile(path, [&](raw_ostream &os) {
    os << text;
  });
}

std::string PhaseDumper::entryPath(StringRef name, StringRef what) {
  std::string file = llvm::formatv("{0:d2}-{1}", count++, name).str();
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, file);
  index += file + ": " + what.str() + "\n";
  return path.str().str();
}

LogicalResult PhaseDumper::writeIndex() {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, "index.txt");
  return writeFile(path, [&](raw_ostream &os) { os << index; });
}

LogicalResult
PhaseDumper::writeFile(StringRef path,
                       llvm::function_ref<void(raw_ostream &)> write) {
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out)
    return emitError(UnknownLoc::get(&context)) << error;
  write(out->os());
  out->keep();
  return success();
}

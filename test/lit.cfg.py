# lit configuration of the Sinter test suite.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "SINTER"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".pbtxt", ".test"]
config.excludes = ["lit.cfg.py", "Inputs", "unit", "fuzz", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.sinter_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Tests run side by side (lit -j, ctest -j), each training binary with an
# OpenMP team as wide as the host: more threads than cores. libgomp's
# default wait spins at every barrier, so a team whose partner thread is
# descheduled burns its slice spinning; two 2-thread char-GPT runs on 2
# cores took 1.5-3.3 x longer each that way than with passive waits
# (docs/Testing.md). Numbers do not depend on it.
config.environment["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY",
                                                       "PASSIVE")

tools = [
    ToolSubst("sinter-opt", unresolved="fatal"),
    ToolSubst("sinterc", unresolved="ignore"),
    ToolSubst("sinter-import-fuzzer", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(
    tools, [config.sinter_tools_dir, config.llvm_tools_dir])

# Ahead of lit's own %python, which is the interpreter running lit.
config.substitutions.insert(0, ("%python", config.sinter_python))
config.substitutions.append(("%sinter_src", config.sinter_src_root))
# The build folder: lib/SinterRuntimeLink.txt links a probe with the runtime.
config.substitutions.append(("%sinter_obj", config.sinter_obj_root))
config.substitutions.append(("%examples",
                             os.path.join(config.sinter_src_root, "examples")))

# The CUDA target: `cuda-toolkit` where sinterc was built with a toolkit
# (ptxas checks every kernel, CUDA binaries link); `cuda` where this machine
# has an NVIDIA GPU and its driver (tests that run kernels: REQUIRES: cuda).
if config.sinter_cuda_toolkit:
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%cuda_toolkit", config.sinter_cuda_toolkit))
    # The driver and cuBLASLt stand-in of test/unit/runtime/FakeCuda.cpp.
    fake = os.path.join(config.sinter_obj_root, "lib", "libsinter_fake_cuda.so")
    if os.path.exists(fake):
        config.available_features.add("fake-cuda")
        config.substitutions.append(("%fake_cuda", fake))
if os.path.exists("/dev/nvidiactl") and any(
        os.path.exists(os.path.join(d, "libcuda.so.1"))
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                  "/usr/local/nvidia/lib64")):
    config.available_features.add("cuda")

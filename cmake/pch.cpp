// Anchor translation unit for the shared precompiled MLIR headers.

//===- Loaders.h - the two DataLoader implementations ---------------------===//
//
// DataLoader::open (DataLoader.cpp) works out from the --data spec which
// files hold the train and eval data and in which format, then hands them to
// one of these. Both check everything they can at open, so that
// nextTrain/evalBatch only copy: the token loader maps its files and checks
// their headers (the vocabulary is checked per window as it is copied), the
// .npy loader reads, converts and checks whole arrays.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_DATA_LOADERS_H
#define SINTER_RUNTIME_DATA_LOADERS_H

#include "runtime/Data/DataLoader.h"
#include "runtime/Data/TokenFiles.h"

#include <memory>
#include <string>
#include <vector>

namespace sinter::data {

/// Token data (TokenLoader.cpp): `files.train` in order form one stream,
/// `files.val` another; with no val files the last evalFraction of the
/// train stream is held out. `label` (the spec) starts errors that concern
/// no single file, and describe().
absl::StatusOr<std::unique_ptr<DataLoader>>
openTokenLoader(const std::string &label, const TokenFileSets &files,
                const std::vector<InputSpec> &inputs,
                const LoaderOptions &options);

/// .npy arrays (NpyLoader.cpp): trainPaths[i] (and valPaths[i], when
/// valPaths is not empty) hold inputs[i]'s examples along axis 0. With no
/// val paths the last evalFraction of the examples are held out.
absl::StatusOr<std::unique_ptr<DataLoader>> openNpyLoader(
    const std::string &label, const std::vector<std::string> &trainPaths,
    const std::vector<std::string> &valPaths,
    const std::vector<InputSpec> &inputs, const LoaderOptions &options);

} // namespace sinter::data

#endif // SINTER_RUNTIME_DATA_LOADERS_H

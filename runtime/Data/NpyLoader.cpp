//===- NpyLoader.cpp - batches of examples from .npy arrays ---------------===//
//
// One .npy array per model input; axis 0 is the example axis and must have
// the same length in every array, the other axes must equal the input's
// shape without its batch dimension. Arrays are converted to the input's
// dtype once, at open, by these rules (anything else is refused, naming the
// file, its dtype and the input's):
//
//   same dtype                      byte copy
//   F64/F32/F16/BF16 -> F32 or F64  rounded to nearest (f16/bf16 -> f32 exact)
//   integer/Bool -> F32 or F64      converted (large i64 may round)
//   integer/Bool -> integer         when every value fits the target; the
//                                   first that does not is named by index
//   float -> integer, anything -> F16/BF16/Bool of another dtype: refused
//
// Each epoch visits the examples in shuffledOrder(seed, epoch) and drops
// those that do not fill a last (global) batch; eval examples are served in
// order. Every rank reads and converts the whole arrays, then copies its
// rows.
//
//===----------------------------------------------------------------------===//

#include "abi/HalfFloat.h"

#include "runtime/Data/Batching.h"
#include "runtime/Data/Loaders.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/Npy.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace sinter::data {

namespace {

using formats::DType;
using formats::HostTensor;

bool isFloat(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

template <typename T> T loadAs(const uint8_t *bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

/// Element `i` of an integer or Bool array.
int64_t loadInt(const uint8_t *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::I64:
    return loadAs<int64_t>(data + 8 * i);
  case DType::I32:
    return loadAs<int32_t>(data + 4 * i);
  case DType::I16:
    return loadAs<int16_t>(data + 2 * i);
  case DType::U16:
    return loadAs<uint16_t>(data + 2 * i);
  case DType::I8:
    return loadAs<int8_t>(data + i);
  default: // U8, Bool
    return data[i];
  }
}

/// Element `i` of a float array, widened exactly to double.
double loadFloat(const uint8_t *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F64:
    return loadAs<double>(data + 8 * i);
  case DType::F32:
    return loadAs<float>(data + 4 * i);
  case DType::F16:
    return half::f16BitsToFloat(loadAs<uint16_t>(data + 2 * i));
  default: // BF16
    return half::bf16BitsToFloat(loadAs<uint16_t>(data + 2 * i));
  }
}

/// The range of an integer dtype.
void intRange(DType dtype, int64_t &lo, int64_t &hi) {
  switch (dtype) {
  case DType::I64:
    lo = std::numeric_limits<int64_t>::min();
    hi = std::numeric_limits<int64_t>::max();
    return;
  case DType::I32:
    lo = std::numeric_limits<int32_t>::min();
    hi = std::numeric_limits<int32_t>::max();
    return;
  case DType::I16:
    lo = std::numeric_limits<int16_t>::min();
    hi = std::numeric_limits<int16_t>::max();
    return;
  case DType::U16:
    lo = 0;
    hi = std::numeric_limits<uint16_t>::max();
    return;
  case DType::I8:
    lo = std::numeric_limits<int8_t>::min();
    hi = std::numeric_limits<int8_t>::max();
    return;
  default: // U8
    lo = 0;
    hi = std::numeric_limits<uint8_t>::max();
    return;
  }
}

void storeInt(uint8_t *data, DType dtype, int64_t i, int64_t value) {
  switch (dtype) {
  case DType::I64:
    std::memcpy(data + 8 * i, &value, 8);
    return;
  case DType::I32: {
    auto narrow = static_cast<int32_t>(value);
    std::memcpy(data + 4 * i, &narrow, 4);
    return;
  }
  case DType::I16: {
    auto narrow = static_cast<int16_t>(value);
    std::memcpy(data + 2 * i, &narrow, 2);
    return;
  }
  case DType::U16: {
    auto narrow = static_cast<uint16_t>(value);
    std::memcpy(data + 2 * i, &narrow, 2);
    return;
  }
  default: // I8, U8
    data[i] = static_cast<uint8_t>(value);
    return;
  }
}

void storeFloat(uint8_t *data, DType dtype, int64_t i, double value) {
  if (dtype == DType::F64) {
    std::memcpy(data + 8 * i, &value, 8);
  } else {
    auto narrow = static_cast<float>(value);
    std::memcpy(data + 4 * i, &narrow, 4);
  }
}

/// `array` (read from `path`) in `input`'s dtype, by the rules at the top.
absl::StatusOr<HostTensor> convert(HostTensor array, const std::string &path,
                                   const InputSpec &input) {
  DType from = array.dtype, to = input.dtype;
  if (from == to)
    return array;
  auto refuse = [&](std::string_view why) {
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrCat("cannot convert ",
                     formats::toAbsl(formats::dtypeName(from)),
                     " data to input ", describeInput(input), " (",
                     formats::toAbsl(why), ")"));
  };
  bool toFloat = to == DType::F32 || to == DType::F64;
  if (!toFloat && isFloat(to))
    return refuse("16-bit float inputs need data of the same dtype");
  if (to == DType::Bool)
    return refuse("Bool inputs need Bool data");
  if (!toFloat && isFloat(from))
    return refuse("floats do not convert to integers");

  absl::StatusOr<int64_t> count = array.numElements();
  if (!count.ok())
    return formats::formatError(SINTER_HERE, path,
                                formats::toStd(count.status().message()));
  absl::StatusOr<HostTensor> out = HostTensor::zeros(to, array.shape);
  if (!out.ok())
    return formats::formatError(SINTER_HERE, path,
                                formats::toStd(out.status().message()));
  const uint8_t *src = array.data.data();
  uint8_t *dst = out->data.data();
  if (toFloat) {
    for (int64_t i = 0; i < *count; ++i)
      storeFloat(dst, to, i,
                 isFloat(from) ? loadFloat(src, from, i)
                               : static_cast<double>(loadInt(src, from, i)));
    return out;
  }
  int64_t lo, hi;
  intRange(to, lo, hi);
  int64_t perExample =
      array.shape[0] > 0 ? std::max<int64_t>(*count / array.shape[0], 1) : 1;
  for (int64_t i = 0; i < *count; ++i) {
    int64_t value = loadInt(src, from, i);
    if (value < lo || value > hi)
      return formats::formatError(SINTER_HERE, path,
                                  absl::StrCat("element ", i, " (example ",
                                               i / perExample, ") is ", value,
                                               ", which does not fit input ",
                                               describeInput(input)));
    storeInt(dst, to, i, value);
  }
  return out;
}

/// Refuses what would train silently wrong: a NaN or infinity in float
/// data, an integer outside the input's bound (a token id past the
/// embedding table, a label past the classes), naming the element and its
/// example.
absl::Status checkValues(const HostTensor &array, const std::string &path,
                         const InputSpec &input) {
  int64_t count = static_cast<int64_t>(array.data.size()) /
                  formats::dtypeByteSize(array.dtype);
  int64_t perExample =
      array.shape[0] > 0 ? std::max<int64_t>(count / array.shape[0], 1) : 1;
  auto where = [&](int64_t i) {
    return perExample == 1
               ? absl::StrCat("example ", i)
               : absl::StrCat("element ", i, " (example ", i / perExample, ")");
  };
  int64_t first = -1;
  if (int64_t bad = formats::countNonFinite(array, &first)) {
    double value = loadFloat(array.data.data(), array.dtype, first);
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrCat(where(first), " of input ", describeInput(input), " is ",
                     std::isnan(value) ? "NaN" : value > 0 ? "inf" : "-inf",
                     bad > 1 ? absl::StrCat(" (", bad, " values are not finite)")
                             : "",
                     ": the model would train on it and every parameter it "
                     "reaches would become NaN"));
  }
  if (!input.bound || isFloat(array.dtype) || array.dtype == DType::Bool)
    return absl::OkStatus();
  for (int64_t i = 0; i < count; ++i) {
    int64_t value = loadInt(array.data.data(), array.dtype, i);
    if ((value >= 0 && value < *input.bound) ||
        (input.ignore && value == *input.ignore))
      continue;
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrCat(where(i), " of input ", describeInput(input), " is ",
                     value, ", outside [0, ", *input.bound, ")",
                     input.ignore ? absl::StrCat(" and not the ignore index ",
                                                 *input.ignore)
                                  : "",
                     " (the model indexes with it: ", *input.bound,
                     " embedding rows or classes)"));
  }
  return absl::OkStatus();
}

/// Reads `path` for `input`: shape [N, input.shape[1:]...], converted.
absl::StatusOr<HostTensor> readArray(const std::string &path,
                                     const InputSpec &input) {
  SINTER_ASSIGN_OR_RETURN(HostTensor array, formats::readNpy(path));
  std::vector<int64_t> expected = input.shape;
  bool fits =
      array.shape.size() == expected.size() &&
      std::equal(expected.begin() + 1, expected.end(), array.shape.begin() + 1);
  if (!fits) {
    std::vector<std::string> want = {"N"};
    for (size_t d = 1; d < expected.size(); ++d)
      want.push_back(std::to_string(expected[d]));
    return formats::formatError(
        SINTER_HERE, path,
        absl::StrCat("shape [", absl::StrJoin(array.shape, ", "),
                     "] does not fit input ", describeInput(input),
                     ": expected [", absl::StrJoin(want, ", "),
                     "] (N examples)"));
  }
  SINTER_ASSIGN_OR_RETURN(HostTensor converted,
                          convert(std::move(array), path, input));
  SINTER_RETURN_IF_ERROR(checkValues(converted, path, input));
  return converted;
}

/// Rows [begin, begin + count) of `array`.
HostTensor sliceRows(const HostTensor &array, int64_t begin, int64_t count) {
  HostTensor out;
  out.dtype = array.dtype;
  out.shape = array.shape;
  out.shape[0] = count;
  size_t rowBytes =
      array.shape[0] == 0 ? 0 : array.data.size() / array.shape[0];
  out.data.assign(array.data.begin() + begin * rowBytes,
                  array.data.begin() + (begin + count) * rowBytes);
  return out;
}

/// Reads one split (one array per input) and checks the example counts
/// agree. Sets `count` to the number of examples.
absl::StatusOr<std::vector<HostTensor>>
readSplit(const std::vector<std::string> &paths,
          const std::vector<InputSpec> &inputs, int64_t &count) {
  std::vector<HostTensor> arrays;
  for (size_t i = 0; i < inputs.size(); ++i) {
    SINTER_ASSIGN_OR_RETURN(HostTensor array, readArray(paths[i], inputs[i]));
    if (i > 0 && array.shape[0] != arrays[0].shape[0])
      return formats::formatError(
          SINTER_HERE, paths[i],
          absl::StrCat("has ", withCommas(array.shape[0]), " examples, but ",
                       paths[0], " has ", withCommas(arrays[0].shape[0])));
    arrays.push_back(std::move(array));
  }
  count = arrays[0].shape[0];
  return arrays;
}

class NpyLoader final : public ItemLoader {
public:
  NpyLoader(std::vector<InputSpec> inputs, std::vector<HostTensor> train,
            std::vector<HostTensor> eval, std::vector<std::string> trainPaths,
            const LoaderOptions &options)
      : ItemLoader(std::move(inputs), train[0].shape[0], options),
        train(std::move(train)), eval(std::move(eval)),
        trainPaths(std::move(trainPaths)) {}

  /// Scans both splits: a held-out batch is weighted by its labels too.
  bool mayHold(size_t input, int64_t value) const override {
    if (input >= train.size())
      return true;
    for (const std::vector<HostTensor> *split : {&train, &eval}) {
      if (input >= split->size())
        continue;
      const HostTensor &array = (*split)[input];
      if (isFloat(array.dtype) || array.dtype == DType::Bool)
        return true;
      int64_t n = static_cast<int64_t>(array.data.size() /
                                       formats::dtypeByteSize(array.dtype));
      for (int64_t i = 0; i < n; ++i)
        if (loadInt(array.data.data(), array.dtype, i) == value)
          return true;
    }
    return false;
  }

private:
  int64_t numEvalItems() const override {
    return eval.empty() ? 0 : eval[0].shape[0];
  }

  /// Row r of every input is example rows[r].
  absl::Status fill(Split split, const std::vector<int64_t> &rows,
                    const std::vector<void *> &dst) const override {
    const std::vector<HostTensor> &arrays =
        split == Split::Train ? train : eval;
    for (size_t k = 0; k < arrays.size(); ++k) {
      size_t rowBytes =
          arrays[k].data.size() / static_cast<size_t>(arrays[k].shape[0]);
      auto *out = static_cast<uint8_t *>(dst[k]);
      for (int64_t r = 0; r < B; ++r)
        std::memcpy(out + r * rowBytes,
                    arrays[k].data.data() +
                        rows[static_cast<size_t>(r)] * rowBytes,
                    rowBytes);
    }
    return absl::OkStatus();
  }

  /// Train item i is row i of each file (a held-out eval split is their
  /// tail).
  std::string describeTrainItem(int64_t item) const override {
    return absl::StrCat("example ", item, " of ",
                        absl::StrJoin(trainPaths, ", "));
  }

  std::vector<HostTensor> train, eval;
  std::vector<std::string> trainPaths;
};

} // namespace

absl::StatusOr<std::unique_ptr<DataLoader>> openNpyLoader(
    const std::string &label, const std::vector<std::string> &trainPaths,
    const std::vector<std::string> &valPaths,
    const std::vector<InputSpec> &inputs, const LoaderOptions &options) {
  int64_t B = inputs[0].shape[0];
  int64_t trainCount = 0, evalCount = 0;
  SINTER_ASSIGN_OR_RETURN(std::vector<HostTensor> train,
                          readSplit(trainPaths, inputs, trainCount));

  std::vector<HostTensor> eval;
  std::string evalText;
  if (!valPaths.empty()) {
    SINTER_ASSIGN_OR_RETURN(eval, readSplit(valPaths, inputs, evalCount));
    evalText = absl::StrCat(withCommas(evalCount), " eval examples");
  } else if (options.evalFraction > 0) {
    evalCount = static_cast<int64_t>(
        std::floor(static_cast<double>(trainCount) * options.evalFraction));
    int64_t kept = trainCount - evalCount;
    for (HostTensor &array : train) {
      eval.push_back(sliceRows(array, kept, evalCount));
      array = sliceRows(array, 0, kept);
    }
    trainCount = kept;
    evalText =
        absl::StrFormat("%s eval examples held out (the last %g%%)",
                        withCommas(evalCount), options.evalFraction * 100);
  } else {
    evalText = "no eval split";
  }

  if (trainCount < B * options.worldSize)
    return formats::formatError(
        SINTER_HERE, label,
        absl::StrCat(withCommas(trainCount), " train examples",
                     valPaths.empty() && evalCount > 0
                         ? " (after the eval hold-out)"
                         : "",
                     ", fewer than one ",
                     globalBatchText(B, options.worldSize, "examples")));

  auto loader = std::make_unique<NpyLoader>(
      inputs, std::move(train), std::move(eval), trainPaths, options);
  int64_t evalBatches = loader->numEvalBatches();
  loader->description = absl::StrCat(
      label, ": ", withCommas(trainCount), " train examples, ", evalText, "; ",
      withCommas(loader->trainBatchesPerEpoch()),
      options.worldSize > 1 ? " global" : "", " batches of ",
      B * options.worldSize, " per epoch, ", withCommas(evalBatches),
      " eval batches",
      evalBatches == 0 && evalCount > 0 ? " (too few eval examples for one)"
                                        : "",
      loader->shardText());
  return std::unique_ptr<DataLoader>(std::move(loader));
}

} // namespace sinter::data

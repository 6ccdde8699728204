//===- DataLoader.cpp - from the --data spec to a loader ------------------===//
//
// How a spec is read, first rule that applies:
//
//   "name=a.npy,name=b.npy"   (contains '=' and is no existing path)
//       .npy arrays, one per input; eval = the last evalFraction.
//   a glob pattern            (contains * ? or [ and is no existing path)
//       its matches, all .bin token files, split by name like a directory's.
//   a .bin file               token data; eval = the last evalFraction.
//   a .npy file               .npy data for a model with a single input.
//   a directory with .bin files
//       token data: names containing "train" are the train set, "val" the
//       eval set; if no name says either, all are train.
//   a directory with train/ (and optionally val/), or with .npy files
//       .npy data: <dir>[/train]/<input name>.npy per input, eval from
//       val/ or else the last evalFraction.
//
// A directory holding both .bin and .npy data is ambiguous and refused. The
// format decides which model it can feed; each loader checks the inputs.
//
//===----------------------------------------------------------------------===//

#include "runtime/Data/DataLoader.h"

#include "runtime/Data/Batching.h"
#include "runtime/Data/Loaders.h"
#include "runtime/Data/TokenFiles.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <glob.h>
#include <limits>

namespace sinter::data {

DataLoader::~DataLoader() = default;

namespace {

namespace fs = std::filesystem;

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

bool isDirectory(const std::string &path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

bool isRegularFile(const std::string &path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

/// The entries of `dir`, sorted by name.
absl::StatusOr<std::vector<std::string>> listDirectory(const std::string &dir) {
  std::error_code ec;
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  if (ec)
    return formats::formatError(
        SINTER_HERE, dir,
        absl::StrCat("cannot list the directory: ", ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

std::string join(const std::string &dir, std::string_view name) {
  return (fs::path(dir) / std::string(name)).string();
}

/// "name=path,name=path": one path per input, in input order.
absl::StatusOr<std::unique_ptr<DataLoader>>
openNpyList(const std::string &spec, const std::vector<InputSpec> &inputs,
            const LoaderOptions &options) {
  std::vector<std::string> paths(inputs.size());
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    size_t eq = item.find('=');
    if (eq == absl::string_view::npos || eq == 0 || eq + 1 == item.size())
      return formats::formatError(
          SINTER_HERE, spec,
          absl::StrCat("'", item, "' is not of the form name=path.npy"));
    std::string name(item.substr(0, eq));
    auto it =
        std::find_if(inputs.begin(), inputs.end(),
                     [&](const InputSpec &in) { return in.name == name; });
    if (it == inputs.end()) {
      std::vector<std::string> names;
      for (const InputSpec &input : inputs)
        names.push_back(input.name);
      return formats::formatError(
          SINTER_HERE, spec,
          absl::StrCat("the model has no input '", name,
                       "' (its inputs: ", absl::StrJoin(names, ", "), ")"));
    }
    std::string &path = paths[static_cast<size_t>(it - inputs.begin())];
    if (!path.empty())
      return formats::formatError(
          SINTER_HERE, spec, absl::StrCat("input '", name, "' is given twice"));
    path = std::string(item.substr(eq + 1));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (paths[i].empty())
      return formats::formatError(SINTER_HERE, spec,
                                  absl::StrCat("no file for input '",
                                               inputs[i].name, "' (give ",
                                               inputs[i].name, "=path.npy)"));
  return openNpyLoader(spec, paths, {}, inputs, options);
}

/// <dir>/<input>.npy for every input.
absl::StatusOr<std::vector<std::string>>
npyPathsIn(const std::string &dir, const std::vector<InputSpec> &inputs) {
  std::vector<std::string> paths;
  for (const InputSpec &input : inputs) {
    std::string path = join(dir, input.name + ".npy");
    if (!isRegularFile(path)) {
      absl::StatusOr<std::vector<std::string>> names = listDirectory(dir);
      std::vector<std::string> found;
      if (names.ok())
        for (const std::string &name : *names)
          if (endsWith(name, ".npy"))
            found.push_back(name);
      return formats::formatError(
          SINTER_HERE, dir,
          absl::StrCat("no ", input.name, ".npy for input ",
                       describeInput(input), " (.npy files here: ",
                       found.empty() ? "none" : absl::StrJoin(found, ", "),
                       ")"));
    }
    paths.push_back(std::move(path));
  }
  return paths;
}

absl::StatusOr<std::unique_ptr<DataLoader>>
openDirectory(const std::string &dir, const std::vector<InputSpec> &inputs,
              const LoaderOptions &options) {
  SINTER_ASSIGN_OR_RETURN(std::vector<std::string> names, listDirectory(dir));
  std::vector<std::string> bins;
  bool hasNpy = false;
  for (const std::string &name : names) {
    std::string path = join(dir, name);
    if (endsWith(name, ".bin") && isRegularFile(path))
      bins.push_back(path);
    else if (endsWith(name, ".npy") && isRegularFile(path))
      hasNpy = true;
  }
  bool hasSplitDirs = isDirectory(join(dir, "train"));

  if (!bins.empty() && (hasNpy || hasSplitDirs))
    return formats::formatError(
        SINTER_HERE, dir,
        absl::StrCat("holds both token .bin files and .npy data (",
                     hasNpy ? ".npy files" : "a train/ folder",
                     "); point --data at one of them"));
  if (!bins.empty()) {
    SINTER_ASSIGN_OR_RETURN(TokenFileSets sets, classifyTokenFiles(dir, bins));
    return openTokenLoader(dir, sets, inputs, options);
  }
  if (hasSplitDirs) {
    SINTER_ASSIGN_OR_RETURN(std::vector<std::string> train,
                            npyPathsIn(join(dir, "train"), inputs));
    std::vector<std::string> val;
    if (isDirectory(join(dir, "val"))) {
      SINTER_ASSIGN_OR_RETURN(val, npyPathsIn(join(dir, "val"), inputs));
    }
    return openNpyLoader(dir, train, val, inputs, options);
  }
  if (hasNpy) {
    SINTER_ASSIGN_OR_RETURN(std::vector<std::string> paths,
                            npyPathsIn(dir, inputs));
    return openNpyLoader(dir, paths, {}, inputs, options);
  }
  return formats::formatError(
      SINTER_HERE, dir,
      "holds no token .bin files, no .npy files and no train/ folder");
}

absl::StatusOr<std::unique_ptr<DataLoader>>
openGlob(const std::string &pattern, const std::vector<InputSpec> &inputs,
         const LoaderOptions &options) {
  glob_t matches{};
  int rc = ::glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> paths;
  if (rc == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i)
      paths.emplace_back(matches.gl_pathv[i]);
  ::globfree(&matches);
  if (rc == GLOB_NOMATCH || (rc == 0 && paths.empty()))
    return sinter::NotFoundError(
        SINTER_HERE, absl::StrCat(pattern, ": the pattern matches no file"));
  if (rc != 0)
    return formats::formatError(SINTER_HERE, pattern,
                                "cannot expand the glob pattern");
  for (const std::string &path : paths)
    if (!endsWith(path, ".bin") || !isRegularFile(path))
      return formats::formatError(
          SINTER_HERE, pattern,
          absl::StrCat("matches '", path,
                       "', which is not a token .bin file (glob "
                       "patterns select token files only)"));
  SINTER_ASSIGN_OR_RETURN(TokenFileSets sets,
                          classifyTokenFiles(pattern, paths));
  return openTokenLoader(pattern, sets, inputs, options);
}

absl::StatusOr<std::unique_ptr<DataLoader>>
openUnwrapped(const std::string &spec, const std::vector<InputSpec> &inputs,
              const LoaderOptions &options) {
  if (spec.empty())
    return sinter::InvalidArgumentError(
        SINTER_HERE,
        "--data is empty: give a token file, a directory, a glob pattern or "
        "name=path.npy,...");
  SINTER_RETURN_IF_ERROR(checkInputs(spec, inputs));
  if (!(options.evalFraction >= 0 && options.evalFraction < 1))
    return formats::formatError(SINTER_HERE, spec,
                                absl::StrCat("the eval fraction ",
                                             options.evalFraction,
                                             " is not in [0, 1)"));
  if (options.vocabSize < 0)
    return formats::formatError(SINTER_HERE, spec,
                                absl::StrCat("the vocabulary size ",
                                             options.vocabSize,
                                             " is negative"));
  if (options.worldSize < 1)
    return formats::formatError(SINTER_HERE, spec,
                                absl::StrCat("the world size ",
                                             options.worldSize,
                                             " is not at least 1"));
  if (options.rank < 0 || options.rank >= options.worldSize)
    return formats::formatError(
        SINTER_HERE, spec,
        absl::StrCat("rank ", options.rank, " is not in [0, ",
                     options.worldSize, ") (the world size)"));
  // checkInputs bounded B by the input's byte size; the global batch must
  // fit an int64 too.
  if (inputs[0].shape[0] >
      std::numeric_limits<int64_t>::max() / options.worldSize)
    return formats::formatError(
        SINTER_HERE, spec,
        absl::StrCat("a global batch of ", options.worldSize, " x ",
                     inputs[0].shape[0], " items is too large"));

  std::error_code ec;
  bool exists = fs::exists(spec, ec);
  if (!exists && spec.find('=') != std::string::npos)
    return openNpyList(spec, inputs, options);
  if (!exists && spec.find_first_of("*?[") != std::string::npos)
    return openGlob(spec, inputs, options);
  if (!exists)
    return sinter::NotFoundError(
        SINTER_HERE, absl::StrCat(spec, ": no such file or directory"));
  if (isDirectory(spec))
    return openDirectory(spec, inputs, options);
  if (!isRegularFile(spec))
    return formats::formatError(SINTER_HERE, spec,
                                "not a regular file or directory");
  if (endsWith(spec, ".bin"))
    return openTokenLoader(spec, TokenFileSets{{spec}, {}}, inputs, options);
  if (endsWith(spec, ".npy")) {
    if (inputs.size() != 1)
      return formats::formatError(SINTER_HERE, spec,
                                  absl::StrCat("one .npy file cannot feed ",
                                               inputs.size(),
                                               " inputs; give a directory or "
                                               "name=path.npy,... for each"));
    return openNpyLoader(spec, {spec}, {}, inputs, options);
  }
  return formats::formatError(
      SINTER_HERE, spec,
      "is neither a token .bin file nor a .npy file (see docs/Data.md "
      "for the --data forms)");
}

} // namespace

absl::StatusOr<std::unique_ptr<DataLoader>>
DataLoader::open(const std::string &spec, const std::vector<InputSpec> &inputs,
                 const LoaderOptions &options) {
  SINTER_ASSIGN_OR_RETURN(std::unique_ptr<DataLoader> loader,
                          openUnwrapped(spec, inputs, options));
  if (!options.prefetch)
    return loader;
  return prefetching(std::move(loader), inputs);
}

} // namespace sinter::data

//===- main.cpp - sinter-text2tokens: a text file to token shards ---------===//
//
//   sinter-text2tokens INPUT.txt OUTDIR [--val-fraction=0.1]
//                      [--encoding=chars|gpt2-bytes]
//
// Turns a text into the token data the training binary reads (docs/Data.md):
// OUTDIR/train.bin and OUTDIR/val.bin as llm.c shards, the first
// (1 - val-fraction) of the tokens and the rest, and OUTDIR/meta.json saying
// how to decode them.
//
//   chars       nanoGPT's shakespeare_char convention: the vocabulary is the
//               sorted set of distinct Unicode code points of the (UTF-8)
//               text, a token is its code point's index. meta.json:
//               {"encoding": "chars", "vocab_size": N, "chars": "..."} with
//               the characters in id order.
//   gpt2-bytes  every byte becomes GPT-2's single-byte token (the order of
//               GPT-2's bytes_to_unicode: bytes 33..126, 161..172, 174..255
//               are ids 0..187, then 0..32, 127..160, 173 are 188..255; so
//               ' ' is 220 and '\n' is 198). Any text, even invalid UTF-8,
//               is valid GPT-2 input this way, without a BPE merge file.
//               meta.json: {"encoding": "gpt2-bytes", "vocab_size": 50257,
//               "byte_tokens": [the token of byte 0, 1, ..., 255]}.
//
// The split is by tokens: train = the first floor(n * (1 - f)), as nanoGPT's
// prepare.py does. Outputs are written atomically. Errors are one line
// "error: ..."; exit code 2 for bad usage, 1 for anything else.
//
//===----------------------------------------------------------------------===//

#include "runtime/Data/TokenFiles.h"
#include "runtime/Formats/AbslCompat.h"
#include "runtime/Formats/FileIO.h"
#include "runtime/Formats/JsonDocument.h"
#include "runtime/Formats/Utf8.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

using namespace sinter;

namespace {

constexpr const char *kUsage =
    R"(usage: sinter-text2tokens INPUT.txt OUTDIR [--val-fraction=0.1]
                          [--encoding=chars|gpt2-bytes]

Writes OUTDIR/train.bin and OUTDIR/val.bin (llm.c token shards: the first
1 - val-fraction of the text and the rest) and OUTDIR/meta.json.

  --encoding=chars       vocabulary = the text's distinct characters
                         (Unicode code points), sorted; id = index (default)
  --encoding=gpt2-bytes  each byte becomes GPT-2's single-byte token
                         (' ' = 220, '\n' = 198)
  --val-fraction=F       share of the tokens for val.bin, 0 <= F < 1
                         (default 0.1)
)";

constexpr int64_t kGpt2VocabSize = 50257;

[[noreturn]] void fail(int code, const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::exit(code);
}

/// GPT-2's token for each byte (bytes_to_unicode order).
std::array<uint16_t, 256> gpt2ByteTokens() {
  std::array<uint16_t, 256> tokens{};
  std::array<bool, 256> printable{};
  uint16_t next = 0;
  for (int b = 0; b < 256; ++b)
    printable[b] = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
                   (b >= 174 && b <= 255);
  for (int b = 0; b < 256; ++b)
    if (printable[b])
      tokens[b] = next++;
  for (int b = 0; b < 256; ++b)
    if (!printable[b])
      tokens[b] = next++;
  return tokens;
}

/// Decodes one UTF-8 code point at `text[at]`, advancing `at`; -1 when the
/// bytes there are not valid UTF-8.
int32_t decodeUtf8(std::string_view text, size_t &at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(at);
  int length = lead < 0x80         ? 1
               : (lead >> 5) == 6  ? 2
               : (lead >> 4) == 14 ? 3
               : (lead >> 3) == 30 ? 4
                                   : 0;
  if (length == 0 || at + static_cast<size_t>(length) > text.size())
    return -1;
  // Validate the whole sequence with the strict checker.
  if (!formats::isValidUtf8(text.substr(at, static_cast<size_t>(length))))
    return -1;
  int32_t code = length == 1 ? lead : lead & (0x7F >> length);
  for (int i = 1; i < length; ++i)
    code = (code << 6) | (byte(at + static_cast<size_t>(i)) & 0x3F);
  at += static_cast<size_t>(length);
  return code;
}

/// chars: the tokens and meta.json's members.
std::vector<uint16_t> encodeChars(const std::string &path,
                                  std::string_view text, formats::Json &meta) {
  std::vector<int32_t> codes;
  codes.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    size_t start = at;
    int32_t code = decodeUtf8(text, at);
    if (code < 0)
      fail(1, absl::StrCat(path, ": byte offset ", start,
                           ": not valid UTF-8 (--encoding=gpt2-bytes takes "
                           "any bytes)"));
    codes.push_back(code);
  }
  std::map<int32_t, uint16_t> ids;
  for (int32_t code : codes)
    ids.emplace(code, 0);
  if (ids.size() > 65536)
    fail(1, absl::StrCat(path, ": ", ids.size(),
                         " distinct characters do not fit uint16 tokens"));
  std::string chars;
  uint16_t next = 0;
  for (auto &[code, id] : ids) {
    id = next++;
    formats::appendUtf8(chars, static_cast<uint32_t>(code));
  }
  std::vector<uint16_t> tokens;
  tokens.reserve(codes.size());
  for (int32_t code : codes)
    tokens.push_back(ids[code]);
  meta["vocab_size"] = static_cast<int64_t>(ids.size());
  meta["chars"] = std::move(chars);
  return tokens;
}

/// gpt2-bytes: the tokens and meta.json's members.
std::vector<uint16_t> encodeGpt2Bytes(std::string_view text,
                                      formats::Json &meta) {
  std::array<uint16_t, 256> table = gpt2ByteTokens();
  std::vector<uint16_t> tokens;
  tokens.reserve(text.size());
  for (char c : text)
    tokens.push_back(table[static_cast<unsigned char>(c)]);
  meta["vocab_size"] = kGpt2VocabSize;
  meta["byte_tokens"] = std::vector<int64_t>(table.begin(), table.end());
  return tokens;
}

std::string withCommas(int64_t value) {
  std::string digits = std::to_string(value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> positional;
  double valFraction = 0.1;
  std::string encoding = "chars";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg.substr(0, 15) == "--val-fraction=") {
      std::string value(arg.substr(15));
      if (!absl::SimpleAtod(value, &valFraction) ||
          !std::isfinite(valFraction) || valFraction < 0 || valFraction >= 1)
        fail(2, absl::StrCat("--val-fraction wants a number in [0, 1), not '",
                             value, "'"));
    } else if (arg.substr(0, 11) == "--encoding=") {
      encoding = std::string(arg.substr(11));
      if (encoding != "chars" && encoding != "gpt2-bytes")
        fail(2, absl::StrCat("--encoding wants chars or gpt2-bytes, not '",
                             encoding, "'"));
    } else if (arg.size() > 1 && arg[0] == '-') {
      fail(2, absl::StrCat("unknown flag '", formats::toAbsl(arg),
                           "' (try --help)"));
    } else {
      positional.emplace_back(arg);
    }
  }
  if (positional.size() != 2)
    fail(2, absl::StrCat("expected INPUT.txt and OUTDIR, got ",
                         positional.size(), " arguments (try --help)"));
  const std::string &input = positional[0], &outDir = positional[1];

  // Read the whole text.
  absl::StatusOr<std::unique_ptr<formats::FileSource>> source =
      formats::FileSource::open(input);
  if (!source.ok())
    fail(1, std::string(source.status().message()));
  std::string text((*source)->size(), '\0');
  if (absl::Status status = (*source)->read(0, text.size(), text.data());
      !status.ok())
    fail(1, std::string(status.message()));
  if (text.empty())
    fail(1, absl::StrCat(input, ": the text is empty"));

  formats::Json meta = formats::Json::object();
  meta["encoding"] = encoding;
  std::vector<uint16_t> tokens = encoding == "chars"
                                     ? encodeChars(input, text, meta)
                                     : encodeGpt2Bytes(text, meta);

  auto trainCount = static_cast<size_t>(
      std::floor(static_cast<double>(tokens.size()) * (1.0 - valFraction)));
  std::vector<uint16_t> train(tokens.begin(), tokens.begin() + trainCount);
  std::vector<uint16_t> val(tokens.begin() + trainCount, tokens.end());

  std::error_code ec;
  std::filesystem::create_directories(outDir, ec);
  if (ec)
    fail(1,
         absl::StrCat(outDir, ": cannot create the directory: ", ec.message()));
  auto path = [&](const char *name) {
    return (std::filesystem::path(outDir) / name).string();
  };
  for (auto [name, part] :
       {std::pair{"train.bin", &train}, std::pair{"val.bin", &val}})
    if (absl::Status status = data::writeLlmcShard(path(name), *part);
        !status.ok())
      fail(1, std::string(status.message()));
  // Valid UTF-8 throughout: the chars are encoded code points of a text
  // that decoded, everything else is ASCII.
  std::string json = formats::writeJson(meta) + "\n";
  if (absl::Status status = formats::writeFileAtomic(path("meta.json"), {json});
      !status.ok())
    fail(1, std::string(status.message()));

  std::printf(
      "%s: %s train + %s val tokens (%s encoding, vocab_size %lld) "
      "from %s\n",
      outDir.c_str(), withCommas(static_cast<int64_t>(train.size())).c_str(),
      withCommas(static_cast<int64_t>(val.size())).c_str(), encoding.c_str(),
      static_cast<long long>(meta["vocab_size"].get<int64_t>()), input.c_str());
  return 0;
}

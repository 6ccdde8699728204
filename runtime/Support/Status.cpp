//===- Status.cpp - errors as values, with where they happened ------------===//
//
// The chain is kept as text, "file:line <- file:line", so statusLocation is
// a payload read and adding a frame an append.
//
//===----------------------------------------------------------------------===//

#include "runtime/Support/Status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace sinter {

static std::string frameText(SourceLocation where) {
  return absl::StrCat(where.file, ":", where.line);
}

absl::Status makeError(SourceLocation where, absl::StatusCode code,
                       absl::string_view message) {
  absl::Status status(code, message);
  if (!status.ok())
    status.SetPayload(kLocationPayloadUrl, absl::Cord(frameText(where)));
  return status;
}

absl::Status addFrame(SourceLocation where, absl::Status status) {
  if (status.ok())
    return status;
  std::string chain = statusLocation(status);
  status.SetPayload(kLocationPayloadUrl,
                    absl::Cord(chain.empty() ? frameText(where)
                                             : absl::StrCat(chain, " <- ",
                                                            frameText(where))));
  return status;
}

absl::Status withMessage(SourceLocation where, const absl::Status &cause,
                         absl::string_view message) {
  absl::Status status(cause.code(), message);
  cause.ForEachPayload([&](absl::string_view url, const absl::Cord &payload) {
    status.SetPayload(url, payload);
  });
  return addFrame(where, std::move(status));
}

std::string statusLocation(const absl::Status &status) {
  absl::optional<absl::Cord> chain = status.GetPayload(kLocationPayloadUrl);
  return chain ? std::string(*chain) : std::string();
}

absl::Status markPeerFailure(absl::Status status, absl::string_view peer) {
  status.SetPayload(kPeerFailurePayloadUrl, absl::Cord(peer));
  return status;
}

bool causedByPeer(const absl::Status &status) {
  return status.GetPayload(kPeerFailurePayloadUrl).has_value();
}

} // namespace sinter

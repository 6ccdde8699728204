//===- Status.h - errors as values, with where they happened --------------===//
//
// Every runtime error is an absl::Status whose message is the one line the
// user sees. This header adds where the error came from, without touching
// the message:
//
//   - Errors are made with the constructors below, which take the place
//     they are made at: `sinter::InvalidArgumentError(SINTER_HERE, msg)`.
//   - SINTER_RETURN_IF_ERROR(expr) and SINTER_ASSIGN_OR_RETURN(lhs, expr)
//     return an error to the caller and add the place they return it from.
//   - statusLocation(status) gives the chain, origin first:
//       "runtime/Exec/CpuExecutor.cpp:120 <- runtime/Train/Trainer.cpp:88"
//
// The chain is an absl::Status payload (kLocationPayloadUrl), not part of
// the message, so messages, and every test that reads them, stay as they
// are; the training binary prints it only when SINTER_ERROR_LOCATIONS=1.
// An error that did not start here (a plain absl::Status) simply starts its
// chain at the first macro that returns it.
//
// Paths are relative to the repository root: SINTER_HERE strips the
// SINTER_SOURCE_ROOT prefix (defined by the SinterRuntimeSupport library for
// everything that links it) from __FILE__ at compile time. Code compiled
// without the definition gets the path as the compiler saw it.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_SUPPORT_STATUS_H
#define SINTER_RUNTIME_SUPPORT_STATUS_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#ifndef SINTER_SOURCE_ROOT
#define SINTER_SOURCE_ROOT ""
#endif

namespace sinter {

/// A place in the source: a path relative to the repository root, a line.
struct SourceLocation {
  const char *file;
  int line;
};

namespace detail {

/// The length of SINTER_SOURCE_ROOT if `path` starts with it, else 0.
constexpr size_t sourceRootLength(const char *path) {
  const char *root = SINTER_SOURCE_ROOT;
  size_t n = 0;
  for (; root[n] != '\0'; ++n)
    if (path[n] != root[n])
      return 0;
  return n;
}

} // namespace detail

/// The current file (relative to the repository root) and line. The
/// integral_constant forces the prefix length to be computed at compile
/// time.
#define SINTER_HERE                                                            \
  (::sinter::SourceLocation{                                                   \
      __FILE__ + std::integral_constant<std::size_t,                           \
                                        ::sinter::detail::sourceRootLength(    \
                                            __FILE__)>::value,                 \
      __LINE__})

/// The type URL of the payload that holds the location chain.
inline constexpr char kLocationPayloadUrl[] = "sinter/error-location";

/// An error with `code` and `message`, made at `where`. An OK `code` gives
/// OkStatus (as absl::Status does).
absl::Status makeError(SourceLocation where, absl::StatusCode code,
                       absl::string_view message);

/// `status` with `where` added to its location chain: what the macros do
/// when they return an error. An OK status is returned as is.
absl::Status addFrame(SourceLocation where, absl::Status status);

/// `cause`'s code and location chain, a new message (usually `cause`'s with
/// context around it), and `where` added to the chain.
absl::Status withMessage(SourceLocation where, const absl::Status &cause,
                         absl::string_view message);

/// The location chain of `status`, origin first, joined by " <- "; empty
/// for OK and for errors that carry none.
std::string statusLocation(const absl::Status &status);

/// The payload type URL that marks an error as a consequence of another
/// rank's failure (the peer died or closed its connection, or the
/// communication library reports it gone): the binary then exits with
/// comm::kExitPeerFailed, so a launcher can name the rank that failed on
/// its own rather than the first survivor to notice.
inline constexpr char kPeerFailurePayloadUrl[] = "sinter/peer-failure";

/// `status` marked as caused by `peer` ("peer rank 1", "a peer rank").
absl::Status markPeerFailure(absl::Status status, absl::string_view peer);

/// Whether `status` carries kPeerFailurePayloadUrl.
bool causedByPeer(const absl::Status &status);

/// The absl constructors, with the place the error is made at.
inline absl::Status CancelledError(SourceLocation where,
                                   absl::string_view message) {
  return makeError(where, absl::StatusCode::kCancelled, message);
}
inline absl::Status DataLossError(SourceLocation where,
                                  absl::string_view message) {
  return makeError(where, absl::StatusCode::kDataLoss, message);
}
inline absl::Status DeadlineExceededError(SourceLocation where,
                                          absl::string_view message) {
  return makeError(where, absl::StatusCode::kDeadlineExceeded, message);
}
inline absl::Status FailedPreconditionError(SourceLocation where,
                                            absl::string_view message) {
  return makeError(where, absl::StatusCode::kFailedPrecondition, message);
}
inline absl::Status InternalError(SourceLocation where,
                                  absl::string_view message) {
  return makeError(where, absl::StatusCode::kInternal, message);
}
inline absl::Status InvalidArgumentError(SourceLocation where,
                                         absl::string_view message) {
  return makeError(where, absl::StatusCode::kInvalidArgument, message);
}
inline absl::Status NotFoundError(SourceLocation where,
                                  absl::string_view message) {
  return makeError(where, absl::StatusCode::kNotFound, message);
}
inline absl::Status OutOfRangeError(SourceLocation where,
                                    absl::string_view message) {
  return makeError(where, absl::StatusCode::kOutOfRange, message);
}
inline absl::Status PermissionDeniedError(SourceLocation where,
                                          absl::string_view message) {
  return makeError(where, absl::StatusCode::kPermissionDenied, message);
}
inline absl::Status ResourceExhaustedError(SourceLocation where,
                                           absl::string_view message) {
  return makeError(where, absl::StatusCode::kResourceExhausted, message);
}
inline absl::Status UnimplementedError(SourceLocation where,
                                       absl::string_view message) {
  return makeError(where, absl::StatusCode::kUnimplemented, message);
}

} // namespace sinter

/// Evaluates `expr` (an absl::Status); if it is an error, returns it from
/// the enclosing function (which returns absl::Status or absl::StatusOr)
/// with this line added to its location chain.
#define SINTER_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    if (::absl::Status sinter_status_ = (expr); !sinter_status_.ok())          \
      return ::sinter::addFrame(SINTER_HERE, std::move(sinter_status_));       \
  } while (false)

/// Evaluates `expr` (an absl::StatusOr<T>); if it is an error, returns it
/// as SINTER_RETURN_IF_ERROR does, otherwise assigns the value to `lhs`,
/// which may declare a variable (`auto x`, `const T &y`: a reference binds
/// to the value inside a temporary that lives to the end of the scope) or
/// name an existing one. A statement, not an expression: at most one per
/// line, and not as the unbraced body of an if or a loop.
#define SINTER_ASSIGN_OR_RETURN(lhs, ...)                                      \
  SINTER_ASSIGN_OR_RETURN_IMPL_(                                               \
      SINTER_STATUS_CONCAT_(sinter_statusor_, __LINE__), lhs, __VA_ARGS__)

#define SINTER_ASSIGN_OR_RETURN_IMPL_(temp, lhs, ...)                          \
  auto temp = (__VA_ARGS__);                                                   \
  if (!temp.ok())                                                              \
    return ::sinter::addFrame(SINTER_HERE, std::move(temp).status());          \
  lhs = *std::move(temp)

#define SINTER_STATUS_CONCAT_(a, b) SINTER_STATUS_CONCAT_INNER_(a, b)
#define SINTER_STATUS_CONCAT_INNER_(a, b) a##b

#endif // SINTER_RUNTIME_SUPPORT_STATUS_H

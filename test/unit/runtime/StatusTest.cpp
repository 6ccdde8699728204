//===- StatusTest.cpp - runtime/Support/Status.h
//---------------------------===//
//
// An error carries the place it was made and every place a macro returned
// it from, origin first, as a payload: the message and code stay exactly
// what the constructor was given. SINTER_ASSIGN_OR_RETURN declares, binds
// or assigns on success and returns the error (with its frame) otherwise.
//
//===----------------------------------------------------------------------===//

#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

constexpr const char *kThisFile = "test/unit/runtime/StatusTest.cpp";

/// The lines the error below is made at and returned from, in call order.
int originLine, innerLine, outerLine;

absl::Status origin() {
  originLine = __LINE__ + 1;
  return sinter::InvalidArgumentError(SINTER_HERE, "weights.bin: bad value 7");
}

absl::Status inner() {
  innerLine = __LINE__ + 1;
  SINTER_RETURN_IF_ERROR(origin());
  return absl::OkStatus();
}

absl::Status outer() {
  outerLine = __LINE__ + 1;
  SINTER_RETURN_IF_ERROR(inner());
  return absl::OkStatus();
}

std::string at(int line) { return absl::StrCat(kThisFile, ":", line); }

TEST(StatusTest, PropagationRecordsEveryFrameInOrder) {
  absl::Status status = outer();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(sinter::statusLocation(status),
            absl::StrCat(at(originLine), " <- ", at(innerLine), " <- ",
                         at(outerLine)));
  // The message and the code are the constructor's, untouched.
  EXPECT_EQ(status.message(), "weights.bin: bad value 7");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.ToString(absl::StatusToStringMode::kWithNoExtraData),
            "INVALID_ARGUMENT: weights.bin: bad value 7");
}

TEST(StatusTest, HerePathIsRelativeToTheRepository) {
  sinter::SourceLocation here = SINTER_HERE;
  EXPECT_STREQ(here.file, kThisFile);
  EXPECT_EQ(here.line, __LINE__ - 2);
}

TEST(StatusTest, OkAndForeignStatuses) {
  EXPECT_TRUE(sinter::addFrame(SINTER_HERE, absl::OkStatus()).ok());
  absl::Status none =
      sinter::makeError(SINTER_HERE, absl::StatusCode::kOk, "ignored");
  EXPECT_TRUE(none.ok());
  EXPECT_EQ(sinter::statusLocation(none), "");
  // An error from outside the runtime starts its chain where it is first
  // returned.
  absl::Status foreign = absl::NotFoundError("no such file");
  EXPECT_EQ(sinter::statusLocation(foreign), "");
  int line = __LINE__ + 1;
  absl::Status framed = sinter::addFrame(SINTER_HERE, foreign);
  EXPECT_EQ(sinter::statusLocation(framed), at(line));
  EXPECT_EQ(framed.message(), "no such file");
  EXPECT_EQ(framed.code(), absl::StatusCode::kNotFound);
}

TEST(StatusTest, WithMessageKeepsCodeAndChain) {
  absl::Status cause = inner();
  int line = __LINE__ + 2;
  absl::Status status = sinter::withMessage(
      SINTER_HERE, cause, absl::StrCat("step 3: ", cause.message()));
  EXPECT_EQ(status.message(), "step 3: weights.bin: bad value 7");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      sinter::statusLocation(status),
      absl::StrCat(at(originLine), " <- ", at(innerLine), " <- ", at(line)));
}

absl::StatusOr<int> half(int value) {
  if (value % 2)
    return sinter::InvalidArgumentError(SINTER_HERE,
                                        absl::StrCat(value, " is odd"));
  return value / 2;
}

absl::StatusOr<std::unique_ptr<int>> boxed(int value) {
  SINTER_ASSIGN_OR_RETURN(int h, half(value));
  return std::make_unique<int>(h);
}

/// Every form of lhs: a declaration, a reference, an existing variable, a
/// move-only value; two uses in one scope.
absl::StatusOr<int> quarterPlusOne(int value, int *lines) {
  lines[0] = __LINE__ + 1;
  SINTER_ASSIGN_OR_RETURN(auto h, half(value));
  lines[1] = __LINE__ + 1;
  SINTER_ASSIGN_OR_RETURN(const std::unique_ptr<int> &q, boxed(h));
  int sum = 0;
  SINTER_ASSIGN_OR_RETURN(sum, half(*q * 2));
  return sum + 1;
}

TEST(StatusTest, AssignOrReturnWithValues) {
  int lines[2] = {0, 0};
  absl::StatusOr<int> result = quarterPlusOne(8, lines);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, 3);
  // Move-only values move out.
  absl::StatusOr<std::unique_ptr<int>> box = boxed(10);
  ASSERT_TRUE(box.ok());
  EXPECT_EQ(**box, 5);
}

TEST(StatusTest, AssignOrReturnWithErrors) {
  int lines[2] = {0, 0};
  // Fails in the first assignment.
  absl::StatusOr<int> result = quarterPlusOne(7, lines);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "7 is odd");
  std::string chain = sinter::statusLocation(result.status());
  EXPECT_EQ(chain.substr(chain.find(" <- ")), " <- " + at(lines[0])) << chain;
  // Fails inside boxed(), returned through two assignments.
  result = quarterPlusOne(6, lines);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "3 is odd");
  chain = sinter::statusLocation(result.status());
  std::vector<std::string> frames;
  for (size_t begin = 0;;) {
    size_t end = chain.find(" <- ", begin);
    frames.push_back(chain.substr(begin, end - begin));
    if (end == std::string::npos)
      break;
    begin = end + 4;
  }
  ASSERT_EQ(frames.size(), 3u) << chain;
  EXPECT_EQ(frames[0].substr(0, frames[0].find(':')), kThisFile);
  EXPECT_EQ(frames[2], at(lines[1]));
}

} // namespace

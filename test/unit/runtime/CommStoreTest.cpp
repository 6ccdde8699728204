//===- CommStoreTest.cpp - TcpStore between threads of one process --------===//
//
// A server and clients on 127.0.0.1, each on its own thread: set, get,
// wait, check, a wait that times out with the missing keys named, a client
// that starts before the server, and a client with no server at all.
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/TcpStore.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace sinter::comm {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<char> bytes(const std::string &text) {
  return std::vector<char>(text.begin(), text.end());
}

TEST(TcpStore, SetGetWaitBetweenThreads) {
  TcpStore server("127.0.0.1", 0, /*isServer=*/true, 5s);
  ASSERT_GT(server.port(), 0);
  TcpStore a("127.0.0.1", server.port(), false, 5s);
  TcpStore b("127.0.0.1", server.port(), false, 5s);

  std::thread writer([&] {
    std::this_thread::sleep_for(100ms);
    a.set("x", bytes("from a"));
    // A value with every byte, and an empty one.
    std::vector<char> all;
    for (int i = 0; i < 256; ++i)
      all.push_back(static_cast<char>(i));
    a.set("binary", all);
    a.set("empty", {});
  });
  // Blocks until the writer has set the keys.
  b.wait({"x", "binary", "empty"});
  writer.join();
  EXPECT_EQ(b.get("x"), bytes("from a"));
  EXPECT_EQ(b.get("binary").size(), 256u);
  EXPECT_EQ(static_cast<unsigned char>(b.get("binary")[255]), 255u);
  EXPECT_TRUE(b.get("empty").empty());
  // The server's own calls see clients' keys, and the other way round.
  EXPECT_EQ(server.get("x"), bytes("from a"));
  server.set("y", bytes("from the server"));
  EXPECT_EQ(a.get("y"), bytes("from the server"));
  // A later set replaces the value.
  b.set("x", bytes("from b"));
  EXPECT_EQ(a.get("x"), bytes("from b"));
}

TEST(TcpStore, CheckDoesNotWait) {
  TcpStore server("127.0.0.1", 0, true, 5s);
  TcpStore client("127.0.0.1", server.port(), false, 5s);
  EXPECT_FALSE(client.check({"k"}));
  EXPECT_FALSE(server.check({"k"}));
  client.set("k", bytes("v"));
  EXPECT_TRUE(client.check({"k"}));
  EXPECT_TRUE(server.check({"k"}));
  EXPECT_FALSE(client.check({"k", "other"}));
  EXPECT_TRUE(client.check({}));
}

TEST(TcpStore, WaitTimesOutNamingTheMissingKeys) {
  TcpStore server("127.0.0.1", 0, true, 5s);
  TcpStore client("127.0.0.1", server.port(), false, 5s);
  client.set("here", bytes("1"));
  for (gloo::rendezvous::Store *store :
       {static_cast<gloo::rendezvous::Store *>(&client),
        static_cast<gloo::rendezvous::Store *>(&server)}) {
    auto start = Clock::now();
    try {
      store->wait({"here", "gone/1", "gone/2"}, 300ms);
      ADD_FAILURE() << "wait returned";
    } catch (const std::runtime_error &e) {
      EXPECT_THAT(e.what(),
                  HasSubstr("Wait timeout for key(s): gone/1, gone/2"));
    }
    auto waited = Clock::now() - start;
    EXPECT_GE(waited, 300ms);
    EXPECT_LT(waited, 2s);
  }
}

TEST(TcpStore, ClientRetriesUntilTheServerStarts) {
  // Find a free port, then start the server on it 300 ms after the client.
  int port;
  {
    TcpStore probe("127.0.0.1", 0, true, 1s);
    port = probe.port();
  }
  std::unique_ptr<TcpStore> server;
  std::thread late([&] {
    std::this_thread::sleep_for(300ms);
    server = std::make_unique<TcpStore>("127.0.0.1", port, true, 5s);
    server->set("ready", bytes("yes"));
  });
  TcpStore client("127.0.0.1", port, false, 5s);
  EXPECT_EQ(client.get("ready"), bytes("yes"));
  late.join();
}

TEST(TcpStore, NoServerIsAnErrorAtTheTimeout) {
  int port;
  {
    TcpStore probe("127.0.0.1", 0, true, 1s);
    port = probe.port();
  }
  auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<TcpStore>> client =
      TcpStore::open("127.0.0.1", port, false, 300ms);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(client.status().message(),
              HasSubstr("cannot reach the store at 127.0.0.1:"));
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(TcpStore, PortInUseIsAnError) {
  TcpStore server("127.0.0.1", 0, true, 1s);
  absl::StatusOr<std::unique_ptr<TcpStore>> second =
      TcpStore::open("127.0.0.1", server.port(), true, 1s);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen on port"));
}

TEST(TcpStore, ServerGoneIsAnErrorNotAHang) {
  auto server = std::make_unique<TcpStore>("127.0.0.1", 0, true, 1s);
  TcpStore client("127.0.0.1", server->port(), false, 1s);
  client.set("k", bytes("v"));
  server.reset();
  EXPECT_THROW(client.get("k"), std::runtime_error);
}

} // namespace
} // namespace sinter::comm

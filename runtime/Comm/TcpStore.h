//===- TcpStore.h - a key-value store over TCP for Gloo's rendezvous ------===//
//
// Gloo's ranks find each other through a gloo::rendezvous::Store: each sets
// its address under its rank and waits for the others'. Debian's Gloo
// (0.0~git20220518) ships a FileStore (needs a shared file system), a
// RedisStore (needs a Redis server) and no TCP store, so this one is written
// by hand, after the idea of PyTorch's c10d TCPStore:
//
//   - Rank 0 is the server. It listens on `port` (all interfaces,
//     SO_REUSEADDR) and serves any number of clients from one background
//     thread, a poll() loop; its own calls read the map directly. The
//     server ends with the object.
//   - Every other rank is a client with one connection. It connects with
//     retries until the timeout, since rank 0 may start later.
//   - Requests are small framed messages (set, get, check); a client's
//     wait() polls check() until the keys are there or the timeout passes.
//
// As Gloo expects of a Store, failures are exceptions (std::runtime_error,
// one line). open() is the absl::Status way in, for Sinter's own code.
//
// Values are bytes of at most 64 MiB; keys are at most 64 KiB. The store
// trusts its clients: it is meant for a job's own ranks on a private network.
//
//===----------------------------------------------------------------------===//

#ifndef SINTER_RUNTIME_COMM_TCPSTORE_H
#define SINTER_RUNTIME_COMM_TCPSTORE_H

#include "absl/status/statusor.h"

#include "gloo/rendezvous/store.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sinter::comm {

class TcpStore : public gloo::rendezvous::Store {
public:
  /// Called by a client between attempts to reach the server, with why the
  /// last one failed ("Connection refused", "Name or service not known").
  using RetryFn = std::function<void(const std::string &why)>;

  /// The server (isServer) binds `port` on every interface and serves until
  /// destroyed; a client connects to host:port, retrying until `timeout`
  /// (calling `retrying`, if given, after each failed attempt). `timeout` is
  /// also the default for wait() and get(). Throws std::runtime_error when
  /// the port cannot be bound or the server not reached in time.
  TcpStore(const std::string &host, int port, bool isServer,
           std::chrono::milliseconds timeout, const RetryFn &retrying = {});
  ~TcpStore() override;

  /// The constructor's errors as a Status: Unavailable, one line.
  static absl::StatusOr<std::unique_ptr<TcpStore>>
  open(const std::string &host, int port, bool isServer,
       std::chrono::milliseconds timeout, const RetryFn &retrying = {});

  void set(const std::string &key, const std::vector<char> &data) override;
  /// Waits (up to the store's timeout) for the key, then returns its value.
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  /// Throws std::runtime_error "Wait timeout for key(s): a, b" (the words
  /// Gloo's own stores use) when some key is still missing at the timeout.
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;
  /// Whether every key is set, without waiting.
  bool check(const std::vector<std::string> &keys);

  /// The port the server listens on (useful when constructed with port 0).
  int port() const { return port_; }

private:
  enum class Op : uint8_t { Set = 1, Get = 2, Check = 3 };

  // Client side: one request and its reply under clientMu_.
  std::vector<char> request(Op op, const std::vector<std::string> &keys,
                            const std::vector<char> &value);
  // Server side.
  void serve();
  bool handle(int fd, std::vector<char> &buffer);
  void setLocal(const std::string &key, const std::vector<char> &data);
  bool checkLocal(const std::vector<std::string> &keys);

  const bool isServer_;
  const std::string host_;
  int port_ = 0;
  const std::chrono::milliseconds timeout_;

  int socket_ = -1;           // server: listening socket; client: connection
  int wakeFds_[2] = {-1, -1}; // server: wakes poll() to stop
  std::thread server_;
  std::mutex clientMu_;

  std::mutex mapMu_;
  std::condition_variable mapChanged_;
  std::map<std::string, std::vector<char>> map_;
};

} // namespace sinter::comm

#endif // SINTER_RUNTIME_COMM_TCPSTORE_H

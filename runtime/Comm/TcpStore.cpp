//===- TcpStore.cpp - a key-value store over TCP for Gloo's rendezvous ----===//
//
// The wire format, every integer a little-endian uint32:
//
//   request  op (1 byte: set 1, get 2, check 3), key count, then per key its
//            length and bytes, then the value's length and bytes (empty
//            except for set)
//   reply    set: 1 byte (1). get: found (1 byte), length, bytes.
//            check: 1 byte, 1 when every key is set
//
// The server never blocks on one client: sockets are non-blocking, a
// client's bytes collect in its buffer until a whole request is there, and
// waiting is the client's business (it polls check). A client that sends
// garbage is disconnected.
//
//===----------------------------------------------------------------------===//

#include "runtime/Comm/TcpStore.h"

#include "runtime/Support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace sinter::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxKeyBytes = 64 << 10;
constexpr uint32_t kMaxValueBytes = 64 << 20;
constexpr uint32_t kMaxKeys = 1 << 20;
/// How often a waiting client asks again; small next to any timeout.
constexpr std::chrono::milliseconds kPollInterval(5);

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error(message);
}

std::string errnoText(int err) { return std::strerror(err); }

void putU32(std::vector<char> &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// Writes all of data; on a non-blocking socket waits up to a second for
/// room each time. False when the peer is gone or does not read.
bool sendAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 1000) <= 0)
        return false;
      continue;
    }
    return false;
  }
  return true;
}

/// Reads exactly size bytes from a blocking socket (whose SO_RCVTIMEO
/// bounds each wait). Throws on EOF, error or timeout.
void recvAll(int fd, char *data, size_t size, const std::string &peer) {
  while (size > 0) {
    ssize_t n = ::recv(fd, data, size, 0);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      fail(absl::StrCat("TcpStore: the store at ", peer,
                        " closed the connection (rank 0 exited?)"));
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      fail(absl::StrCat("TcpStore: the store at ", peer,
                        " did not answer in time"));
    fail(absl::StrCat("TcpStore: reading from the store at ", peer, ": ",
                      errnoText(errno)));
  }
}

/// A listening socket on every interface: IPv6 dual-stack, else IPv4.
int listenOn(int port, int &boundPort) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6)
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    fail(absl::StrCat("TcpStore: socket: ", errnoText(errno)));
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  }
  if (rc != 0 || ::listen(fd, 1024) != 0) {
    int err = errno;
    ::close(fd);
    fail(absl::StrCat("TcpStore: cannot listen on port ", port, ": ",
                      errnoText(err)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &len);
  boundPort = ntohs(v6 ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                       : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/// A connection to host:port, retried until the deadline.
int connectTo(const std::string &host, int port,
              std::chrono::milliseconds timeout,
              const TcpStore::RetryFn &retrying) {
  const std::string where = absl::StrCat(host, ":", port);
  const auto deadline = Clock::now() + timeout;
  std::string lastError = "no address";
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                            &found);
    if (gai != 0) {
      lastError = gai_strerror(gai);
    } else {
      for (addrinfo *a = found; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                          a->ai_protocol);
        if (fd < 0)
          continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(found);
          return fd;
        }
        lastError = errnoText(errno);
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    if (Clock::now() >= deadline)
      fail(absl::StrCat("TcpStore: cannot reach the store at ", where,
                        " within ", timeout.count(), " ms: ", lastError));
    if (retrying)
      retrying(lastError);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace

TcpStore::TcpStore(const std::string &host, int port, bool isServer,
                   std::chrono::milliseconds timeout, const RetryFn &retrying)
    : isServer_(isServer), host_(host), port_(port), timeout_(timeout) {
  if (isServer_) {
    socket_ = listenOn(port, port_);
    if (::pipe2(wakeFds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      ::close(socket_);
      fail(absl::StrCat("TcpStore: pipe: ", errnoText(errno)));
    }
    server_ = std::thread([this] { serve(); });
    return;
  }
  socket_ = connectTo(host, port, timeout, retrying);
  setNoDelay(socket_);
  // A stalled server must not hang a client forever.
  timeval tv{};
  auto ms = std::max<int64_t>(timeout.count(), 1000);
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(socket_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

TcpStore::~TcpStore() {
  if (isServer_) {
    char byte = 0;
    (void)!::write(wakeFds_[1], &byte, 1);
    if (server_.joinable())
      server_.join();
    ::close(wakeFds_[0]);
    ::close(wakeFds_[1]);
  }
  if (socket_ >= 0)
    ::close(socket_);
}

absl::StatusOr<std::unique_ptr<TcpStore>>
TcpStore::open(const std::string &host, int port, bool isServer,
               std::chrono::milliseconds timeout, const RetryFn &retrying) {
  try {
    return std::make_unique<TcpStore>(host, port, isServer, timeout, retrying);
  } catch (const std::exception &e) {
    return makeError(SINTER_HERE, absl::StatusCode::kUnavailable, e.what());
  }
}

//===- Client and local calls ---------------------------------------------===//

std::vector<char> TcpStore::request(Op op, const std::vector<std::string> &keys,
                                    const std::vector<char> &value) {
  std::vector<char> message;
  message.push_back(static_cast<char>(op));
  putU32(message, static_cast<uint32_t>(keys.size()));
  for (const std::string &key : keys) {
    putU32(message, static_cast<uint32_t>(key.size()));
    message.insert(message.end(), key.begin(), key.end());
  }
  putU32(message, static_cast<uint32_t>(value.size()));
  message.insert(message.end(), value.begin(), value.end());

  const std::string peer = absl::StrCat(host_, ":", port_);
  std::lock_guard<std::mutex> lock(clientMu_);
  if (!sendAll(socket_, message.data(), message.size()))
    fail(absl::StrCat("TcpStore: writing to the store at ", peer, ": ",
                      errnoText(errno)));
  char head[5];
  if (op != Op::Get) {
    recvAll(socket_, head, 1, peer);
    return {head[0]};
  }
  recvAll(socket_, head, 5, peer);
  uint32_t size = getU32(head + 1);
  if (size > kMaxValueBytes)
    fail(absl::StrCat("TcpStore: the store at ", peer,
                      " sent a malformed reply"));
  std::vector<char> reply(1 + size_t(size));
  reply[0] = head[0];
  recvAll(socket_, reply.data() + 1, size, peer);
  return reply;
}

void TcpStore::setLocal(const std::string &key, const std::vector<char> &data) {
  {
    std::lock_guard<std::mutex> lock(mapMu_);
    map_[key] = data;
  }
  mapChanged_.notify_all();
}

bool TcpStore::checkLocal(const std::vector<std::string> &keys) {
  std::lock_guard<std::mutex> lock(mapMu_);
  for (const std::string &key : keys)
    if (!map_.count(key))
      return false;
  return true;
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  if (key.size() > kMaxKeyBytes || data.size() > kMaxValueBytes)
    fail(absl::StrCat("TcpStore: key or value too large for key ", key));
  if (isServer_)
    setLocal(key, data);
  else
    request(Op::Set, {key}, data);
}

bool TcpStore::check(const std::vector<std::string> &keys) {
  if (isServer_)
    return checkLocal(keys);
  return request(Op::Check, keys, {})[0] == 1;
}

std::vector<char> TcpStore::get(const std::string &key) {
  wait({key}, timeout_);
  if (isServer_) {
    std::lock_guard<std::mutex> lock(mapMu_);
    return map_.at(key);
  }
  std::vector<char> reply = request(Op::Get, {key}, {});
  if (reply[0] != 1)
    fail(absl::StrCat("TcpStore: key ", key, " vanished"));
  return std::vector<char>(reply.begin() + 1, reply.end());
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout_);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &timeout) {
  const auto deadline = Clock::now() + timeout;
  if (isServer_) {
    std::unique_lock<std::mutex> lock(mapMu_);
    auto allSet = [&] {
      for (const std::string &key : keys)
        if (!map_.count(key))
          return false;
      return true;
    };
    if (mapChanged_.wait_until(lock, deadline, allSet))
      return;
  } else {
    for (;;) {
      if (check(keys))
        return;
      if (Clock::now() >= deadline)
        break;
      std::this_thread::sleep_for(kPollInterval);
    }
  }
  std::vector<std::string> missing;
  for (const std::string &key : keys)
    if (!check({key}))
      missing.push_back(key);
  fail(absl::StrCat("Wait timeout for key(s): ", absl::StrJoin(missing, ", "),
                    " (after ", timeout.count(), " ms)"));
}

//===- Server -------------------------------------------------------------===//

void TcpStore::serve() {
  // fds[0] wakes us to stop, fds[1] is the listener, the rest are clients.
  std::vector<pollfd> fds = {{wakeFds_[0], POLLIN, 0}, {socket_, POLLIN, 0}};
  std::vector<std::vector<char>> buffers(2);
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (fds[0].revents)
      break;
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int client =
            ::accept4(socket_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client < 0)
          break;
        setNoDelay(client);
        fds.push_back({client, POLLIN, 0});
        buffers.emplace_back();
      }
    }
    for (size_t i = 2; i < fds.size();) {
      bool keep = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
        keep = handle(fds[i].fd, buffers[i]);
      if (keep) {
        ++i;
        continue;
      }
      ::close(fds[i].fd);
      fds.erase(fds.begin() + i);
      buffers.erase(buffers.begin() + i);
    }
  }
  for (size_t i = 2; i < fds.size(); ++i)
    ::close(fds[i].fd);
}

bool TcpStore::handle(int fd, std::vector<char> &buffer) {
  char chunk[64 << 10];
  for (;;) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer.insert(buffer.end(), chunk, chunk + n);
      continue;
    }
    if (n == 0)
      return false; // the client is gone
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      break;
    return false;
  }
  // Answer every whole request in the buffer.
  for (;;) {
    size_t at = 0;
    auto need = [&](size_t bytes) { return buffer.size() - at >= bytes; };
    if (!need(5))
      return true;
    Op op = static_cast<Op>(buffer[0]);
    uint32_t nkeys = getU32(&buffer[1]);
    if ((op != Op::Set && op != Op::Get && op != Op::Check) || nkeys > kMaxKeys)
      return false;
    at = 5;
    std::vector<std::string> keys;
    bool whole = true;
    for (uint32_t k = 0; k < nkeys; ++k) {
      if (!need(4)) {
        whole = false;
        break;
      }
      uint32_t len = getU32(&buffer[at]);
      if (len > kMaxKeyBytes)
        return false;
      if (!need(4 + size_t(len))) {
        whole = false;
        break;
      }
      keys.emplace_back(&buffer[at + 4], len);
      at += 4 + len;
    }
    if (!whole || !need(4))
      return true;
    uint32_t valueLen = getU32(&buffer[at]);
    if (valueLen > kMaxValueBytes)
      return false;
    if (!need(4 + size_t(valueLen)))
      return true;
    std::vector<char> value(buffer.begin() + at + 4,
                            buffer.begin() + at + 4 + valueLen);
    at += 4 + valueLen;
    buffer.erase(buffer.begin(), buffer.begin() + at);

    std::vector<char> reply;
    if (op == Op::Set) {
      if (keys.size() != 1)
        return false;
      setLocal(keys[0], value);
      reply = {1};
    } else if (op == Op::Check) {
      reply = {static_cast<char>(checkLocal(keys) ? 1 : 0)};
    } else {
      if (keys.size() != 1)
        return false;
      std::lock_guard<std::mutex> lock(mapMu_);
      auto it = map_.find(keys[0]);
      reply.push_back(it == map_.end() ? 0 : 1);
      const std::vector<char> empty;
      const std::vector<char> &found = it == map_.end() ? empty : it->second;
      putU32(reply, static_cast<uint32_t>(found.size()));
      reply.insert(reply.end(), found.begin(), found.end());
    }
    if (!sendAll(fd, reply.data(), reply.size()))
      return false;
  }
}

} // namespace sinter::comm

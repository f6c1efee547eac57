#include "engine/repl/replica_client.hpp"

#include "engine/resp/request_writer.hpp"
#include "engine/util/strings.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

namespace keyshift::engine {
namespace {

constexpr size_t k_read_size = size_t{1} << 20;

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string encode(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) {
    out += "$" + std::to_string(a.size()) + "\r\n";
    out.append(a);
    out += "\r\n";
  }
  return out;
}

/// True when an error reply means the server will not replicate to us at all.
bool refuses_replication(std::string_view error) {
  return error.find("unknown command") != std::string_view::npos || error.starts_with("NOPERM") ||
         error.find("not allowed") != std::string_view::npos;
}

}  // namespace

/// Sits between the parser and the caller's handler: answers REPLCONF GETACK with the
/// offset before it (as a replica's reploff is then), drops the primary's PINGs (their bytes
/// are counted all the same) and asks for the first ACK once the payload is in, which a
/// primary that sent a diskless payload waits for before it streams commands.
class ReplicaClient::GetAckFilter final : public ReplStreamHandler {
 public:
  GetAckFilter(ReplStreamHandler& inner, uint64_t offset) : m_inner(inner), m_before(offset) {}

  void on_keepalive() override { m_inner.on_keepalive(); }
  bool on_payload_begin(std::optional<uint64_t> size) override {
    return m_inner.on_payload_begin(size);
  }
  bool on_payload(std::string_view bytes) override { return m_inner.on_payload(bytes); }
  // PINGs and GETACKs too: a replica's replicas count them as its primary does.
  void on_stream_bytes(std::string_view raw) override { m_inner.on_stream_bytes(raw); }
  bool on_payload_end() override {
    ack_offset = m_before;
    return m_inner.on_payload_end();
  }
  bool on_command(std::span<const std::string_view> argv, uint64_t offset) override {
    uint64_t before = m_before;
    m_before = offset;
    if (argv.size() >= 2 && iequals(argv[0], "replconf")) {
      if (iequals(argv[1], "getack")) {
        ack_offset = before;
      }
      return true;
    }
    if (argv.size() == 1 && iequals(argv[0], "ping")) {
      return true;
    }
    return m_inner.on_command(argv, offset);
  }

  std::optional<uint64_t> ack_offset;

 private:
  ReplStreamHandler& m_inner;
  uint64_t m_before;
};

ReplicaClient::ReplicaClient(Transport transport, RespEndpoint endpoint, const Clock& clock,
                             ReplicaOptions options)
    : m_fd(transport.fd()),
      m_transport(std::move(transport)),
      m_endpoint(std::move(endpoint)),
      m_clock(&clock),
      m_options(options) {}

ReplicaClient::ReplicaClient(ReplicaClient&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)),
      m_transport(std::move(other.m_transport)),
      m_endpoint(std::move(other.m_endpoint)),
      m_clock(other.m_clock),
      m_options(other.m_options),
      m_stream(std::move(other.m_stream)),
      m_early(std::move(other.m_early)),
      m_in(std::move(other.m_in)),
      m_in_cap(other.m_in_cap),
      m_last_ack_us(other.m_last_ack_us),
      m_fsynced(other.m_fsynced),
      m_last_read_us(other.m_last_read_us),
      m_received(other.m_received),
      m_resume(other.m_resume) {}

ReplicaClient& ReplicaClient::operator=(ReplicaClient&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = std::exchange(other.m_fd, -1);
    m_transport = std::move(other.m_transport);
    m_endpoint = std::move(other.m_endpoint);
    m_clock = other.m_clock;
    m_options = other.m_options;
    m_stream = std::move(other.m_stream);
    m_early = std::move(other.m_early);
    m_in = std::move(other.m_in);
    m_in_cap = other.m_in_cap;
    m_last_ack_us = other.m_last_ack_us;
    m_fsynced = other.m_fsynced;
    m_last_read_us = other.m_last_read_us;
    m_received = other.m_received;
    m_resume = other.m_resume;
  }
  return *this;
}

ReplicaClient::~ReplicaClient() {
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

ReplError ReplicaClient::failure(std::string what) const {
  return ReplError{m_endpoint.describe() + ": " + std::move(what), false};
}

Expected<ReplicaClient, ReplError> ReplicaClient::connect(const RespEndpoint& endpoint,
                                                          const Clock& clock,
                                                          const ReplicaOptions& options) {
  RespEndpoint link = endpoint;
  link.db = 0;  // the stream selects its own databases
  link.protocol = 2;
  auto conn = RespConnection::connect(link);
  if (!conn) {
    return Unexpected{ReplError{conn.error(), false}};
  }
  auto pong = conn->call({"PING"});
  if (!pong) {
    return Unexpected{ReplError{pong.error(), false}};
  }
  if (pong->is_error()) {
    return Unexpected{ReplError{endpoint.describe() + ": PING failed: " + pong->str,
                                refuses_replication(pong->str)}};
  }
  // Valkey's replica ignores errors to these (an older primary may not know a capability).
  std::vector<std::vector<std::string>> confs;
  if (options.listening_port > 0) {
    confs.push_back({"REPLCONF", "listening-port", std::to_string(options.listening_port)});
  }
  if (options.capa_eof) {
    confs.push_back({"REPLCONF", "capa", "eof", "capa", "psync2"});
  } else {
    confs.push_back({"REPLCONF", "capa", "psync2"});
  }
  for (const auto& c : confs) {
    auto r = conn->call(c);
    if (!r) {
      return Unexpected{ReplError{r.error(), false}};
    }
    if (r->is_error() && refuses_replication(r->str) &&
        r->str.find("REPLCONF") != std::string::npos) {
      return Unexpected{ReplError{endpoint.describe() + ": REPLCONF refused: " + r->str, true}};
    }
  }
  Transport transport = conn->release_transport();
  int fd = transport.fd();
  if (fd < 0) {
    return Unexpected{
        ReplError{endpoint.describe() + ": unexpected bytes after the handshake", false}};
  }
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  ReplicaClient client(std::move(transport), endpoint, clock, options);
  client.m_in_cap = k_read_size;
  client.m_in = std::make_unique<char[]>(k_read_size);
  client.m_last_read_us = clock.monotonic_us();
  return client;
}

Expected<bool, ReplError> ReplicaClient::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    IoResult r = m_transport.write(bytes.data(), bytes.size());
    if (r.status == IoStatus::ok) {
      bytes.remove_prefix(r.bytes);
      continue;
    }
    if (r.status == IoStatus::want_read || r.status == IoStatus::want_write) {
      pollfd p{m_fd, static_cast<short>(r.status == IoStatus::want_read ? POLLIN : POLLOUT), 0};
      int n = ::poll(&p, 1, static_cast<int>(m_options.timeout.count()));
      if (n == 0) {
        return Unexpected{failure("write timed out")};
      }
      continue;
    }
    if (r.status == IoStatus::closed) {
      return Unexpected{failure("the primary closed the connection")};
    }
    return Unexpected{failure("write failed: " + m_transport.error())};
  }
  return true;
}

ssize_t ReplicaClient::read_some(std::string& error) {
  IoResult r = m_transport.read(m_in.get(), m_in_cap);
  switch (r.status) {
    case IoStatus::ok:
      return r.bytes > 0 ? static_cast<ssize_t>(r.bytes) : -1;
    case IoStatus::want_read:
    case IoStatus::want_write:
      return -1;
    case IoStatus::closed:
      return 0;
    case IoStatus::error:
      break;
  }
  error = m_transport.error();
  return -2;
}

int ReplicaClient::wait_readable(int timeout_ms) {
  if (m_transport.pending() > 0) {
    return 1;  // TLS holds decrypted bytes poll cannot see
  }
  pollfd p{m_fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms);
}

Expected<PsyncResult, ReplError> ReplicaClient::psync(std::string_view replid, uint64_t offset) {
  std::string off = replid.empty() ? "-1" : std::to_string(offset + 1);
  if (auto sent = write_all(encode({"PSYNC", replid.empty() ? "?" : replid, off})); !sent) {
    return Unexpected{sent.error()};
  }
  // The reply line, after any keepalive newlines; what follows it is the stream's.
  std::string got;
  int64_t deadline =
      m_clock->monotonic_us() +
      std::chrono::duration_cast<std::chrono::microseconds>(m_options.timeout).count();
  size_t eol = std::string::npos;
  for (;;) {
    size_t skip = 0;
    while (skip < got.size() && got[skip] == '\n') {
      ++skip;
    }
    got.erase(0, skip);
    eol = got.find("\r\n");
    if (eol != std::string::npos) {
      break;
    }
    int64_t left_us = deadline - m_clock->monotonic_us();
    if (left_us <= 0) {
      return Unexpected{failure("no answer to PSYNC")};
    }
    int r = wait_readable(static_cast<int>(std::min<int64_t>(left_us / 1000 + 1, 1000)));
    if (r < 0 && errno != EINTR) {
      return Unexpected{failure("poll failed: " + errno_text(errno))};
    }
    if (r <= 0) {
      continue;
    }
    std::string why;
    ssize_t n = read_some(why);
    if (n == 0) {
      return Unexpected{failure("the primary closed the connection after PSYNC")};
    }
    if (n == -1) {
      continue;
    }
    if (n < 0) {
      return Unexpected{failure("read failed: " + why)};
    }
    m_received += static_cast<uint64_t>(n);
    got.append(m_in.get(), static_cast<size_t>(n));
  }
  std::string line = got.substr(0, eol);
  m_early = got.substr(eol + 2);
  m_last_read_us = m_clock->monotonic_us();
  PsyncResult result;
  auto words = [&line] {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < line.size()) {
      size_t sp = line.find(' ', at);
      out.push_back(line.substr(at, sp == std::string::npos ? std::string::npos : sp - at));
      if (sp == std::string::npos) {
        break;
      }
      at = sp + 1;
    }
    return out;
  }();
  if (line.starts_with("+FULLRESYNC")) {
    uint64_t start = 0;
    if (words.size() != 3 ||
        std::from_chars(words[2].data(), words[2].data() + words[2].size(), start).ec !=
            std::errc()) {
      return Unexpected{failure("bad FULLRESYNC reply: '" + line + "'")};
    }
    result.full = true;
    result.replid = words[1];
    result.offset = start;
  } else if (line.starts_with("+CONTINUE")) {
    result.replid = std::string(replid);
    if (words.size() >= 2 && words[1] != result.replid) {
      result.old_replid = result.replid;
      result.replid = words[1];
    }
    result.offset = offset;
  } else if (line.starts_with("-")) {
    std::string error = line.substr(1);
    return Unexpected{
        ReplError{m_endpoint.describe() + ": PSYNC failed: " + error, refuses_replication(error)}};
  } else {
    return Unexpected{failure("unexpected answer to PSYNC: '" + line.substr(0, 80) + "'")};
  }
  m_stream = std::make_unique<ReplStreamParser>(result.full, result.offset);
  return result;
}

Expected<bool, ReplError> ReplicaClient::send_ack() {
  return send_ack_of(m_stream ? m_stream->offset() : 0);
}

Expected<bool, ReplError> ReplicaClient::send_ack_of(uint64_t offset) {
  m_last_ack_us = m_clock->monotonic_us();
  if (m_fsynced) {
    // Never past what is acknowledged: the AOF cannot hold more than was applied.
    uint64_t fsynced = std::min(*m_fsynced, offset);
    return write_all(
        encode({"REPLCONF", "ACK", std::to_string(offset), "FACK", std::to_string(fsynced)}));
  }
  return write_all(encode({"REPLCONF", "ACK", std::to_string(offset)}));
}

Expected<bool, ReplError> ReplicaClient::poll(ReplStreamHandler& handler,
                                              std::chrono::milliseconds wait) {
  if (!m_stream) {
    return Unexpected{failure("poll before PSYNC")};
  }
  GetAckFilter filter(handler, m_stream->offset());
  auto feed = [&](std::string_view bytes) -> Expected<bool, ReplError> {
    auto fed = m_stream->feed(bytes, filter);
    if (!fed) {
      return Unexpected{failure(fed.error())};
    }
    if (filter.ack_offset) {
      uint64_t off = *filter.ack_offset;
      filter.ack_offset.reset();
      if (auto sent = send_ack_of(off); !sent) {
        return sent;
      }
    }
    return *fed;
  };
  if (m_resume || !m_early.empty()) {
    std::string early = std::move(m_early);
    m_early.clear();
    m_resume = false;
    auto fed = feed(early);
    if (!fed) {
      return fed;
    }
    if (!*fed) {
      m_resume = true;  // paused again: the parser still holds commands
      return false;
    }
  }
  int64_t now = m_clock->monotonic_us();
  if (m_stream->phase() == ReplStreamParser::Phase::commands &&
      now - m_last_ack_us >=
          std::chrono::duration_cast<std::chrono::microseconds>(m_options.ack_period).count()) {
    if (auto sent = send_ack(); !sent) {
      return sent;
    }
  }
  int r = wait_readable(static_cast<int>(wait.count()));
  if (r < 0 && errno != EINTR) {
    return Unexpected{failure("poll failed: " + errno_text(errno))};
  }
  if (r <= 0) {
    if (m_clock->monotonic_us() - m_last_read_us >
        std::chrono::duration_cast<std::chrono::microseconds>(m_options.timeout).count()) {
      return Unexpected{failure("the primary sent nothing for " +
                                std::to_string(m_options.timeout.count() / 1000) + " s")};
    }
    return false;
  }
  std::string why;
  ssize_t n = read_some(why);
  if (n == 0) {
    return Unexpected{failure("the primary closed the replication link")};
  }
  if (n == -1) {
    return false;
  }
  if (n < 0) {
    return Unexpected{failure("read failed: " + why)};
  }
  m_received += static_cast<uint64_t>(n);
  m_last_read_us = m_clock->monotonic_us();
  auto fed = feed(std::string_view(m_in.get(), static_cast<size_t>(n)));
  if (fed && !*fed && m_stream->buffered() > 0) {
    m_resume = true;  // paused with commands left: the next poll resumes them first
  }
  return fed;
}

}  // namespace keyshift::engine

#pragma once

#include "engine/resp/pipelined_connection.hpp"
#include "engine/util/expected.hpp"
#include "migrate/rdb_inspect.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// The write side of `keyshift import --to URL`: RESTORE ... ABSTTL through one pipelined
// connection with a bounded window, replies matched to keys in order, so the caller learns
// which keys the target has acknowledged (the checkpoint moves only past those).
namespace keyshift::migrate {

/// What the target server is, from INFO server.
struct TargetServer {
  std::string name;     ///< "redis", "valkey" or "keyshift"
  std::string version;  ///< "7.0.15"
  RdbTarget rdb = RdbTarget::valkey_8_0;
};

/// Reads INFO server's text: the server and the RDB it takes; an error for servers older
/// than Redis 7.0, whose RDB keyshift does not write.
engine::Expected<TargetServer, std::string> identify_server(std::string_view info_server);

/// How long to wait for a server that answers -LOADING (it is loading its dataset), and
/// whom to tell that we wait.
struct LoadingWait {
  std::chrono::seconds limit{300};
  std::function<void(const std::string&)> notice;
};

/// PINGs `link` until the server has loaded its dataset: -LOADING is waited out (a notice
/// first, then a PING every 200 ms) up to `wait.limit`; an error after that.
engine::Expected<bool, std::string> wait_until_loaded(engine::PipelinedConnection& link,
                                                      const LoadingWait& wait);

/// What happened to one key sent to the target.
enum class WriteOutcome : uint8_t {
  written,
  conflict_skipped,
  expired_in_flight,  ///< sent as commands, its TTL passed before the rename (not lost)
};

/// A key's place in the source, handed back when the target answered for it.
struct PendingKey {
  uint64_t db = 0;
  std::string key;
  uint64_t position = 0;  ///< the source's resume position after this key
  uint8_t kind = 0;       ///< the caller's tag (the value's RdbKind), for counts by type
};

/// A RESTORE writer.
class LiveTarget {
 public:
  /// Called for each key the target acknowledged, in the order sent.
  using AckFn = std::function<void(const PendingKey&, WriteOutcome)>;

  /// Connects (HELLO/AUTH/SELECT as the endpoint says) and reads INFO server.
  /// A target still loading its dataset is waited for (`loading`).
  static engine::Expected<LiveTarget, std::string> open(const engine::RespEndpoint& endpoint,
                                                        uint32_t window,
                                                        const LoadingWait& loading = {});

  /// The server, as identified.
  const TargetServer& server() const { return m_server; }
  /// The endpoint, for messages.
  std::string describe() const { return m_link.endpoint().describe(); }

  /// Queues RESTORE of `payload` as `key` in `db`, absolute TTL `expire_ms` (-1: none),
  /// REPLACE when `replace`; `idle_s`/`freq` are kept when set (>= 0). Waits for replies
  /// while the window is full. A BUSYKEY reply is a skipped conflict when `skip_conflicts`,
  /// otherwise an error.
  engine::Expected<bool, std::string> restore(PendingKey pending, int64_t expire_ms,
                                              std::string_view payload, bool replace,
                                              int64_t idle_s, int freq);
  /// Queues one command of a key written as commands (`pending.key` names it in errors);
  /// any error reply stops the import. Nothing is acknowledged by it.
  engine::Expected<bool, std::string> send_part(uint64_t db, std::string_view key,
                                                std::span<const std::string_view> args);
  /// Queues the command that completes a key written as commands (RENAME, RENAMENX, SET):
  /// its reply acknowledges `pending`. A 0 or nil reply (RENAMENX, SET NX) is a conflict;
  /// "no such key" from a rename is a key whose TTL passed on the way. A `cleanup` command
  /// (DEL of a temporary key a refused RENAMENX left) follows it, and the key is
  /// acknowledged once that too is answered.
  engine::Expected<bool, std::string> send_last(PendingKey pending,
                                                std::span<const std::string_view> args,
                                                std::span<const std::string_view> cleanup = {});
  /// Waits until every queued write is answered.
  engine::Expected<bool, std::string> drain();

  /// Which of `keys` (in database `db`) exist in the target; the names in order.
  engine::Expected<std::vector<std::string>, std::string> existing(
      uint64_t db, const std::vector<std::string>& keys);

  /// CONFIG GET `name`'s value; nothing when the target refuses (CONFIG renamed or denied).
  engine::Expected<std::optional<std::string>, std::string> config_value(std::string_view name);

  /// Receives acknowledgements (set before the first restore).
  void on_ack(AckFn fn) { m_on_ack = std::move(fn); }
  /// Turns BUSYKEY into skipped conflicts instead of errors.
  void skip_conflicts(bool skip) { m_skip_conflicts = skip; }
  /// Bytes queued so far.
  uint64_t bytes_sent() const { return m_bytes_sent; }

 private:
  LiveTarget(engine::PipelinedConnection link, TargetServer server);
  engine::Expected<bool, std::string> select(uint64_t db);
  engine::Expected<bool, std::string> take_replies(bool wait_all);

  engine::PipelinedConnection m_link;
  TargetServer m_server;
  engine::Expected<bool, std::string> room(size_t bytes);
  /// A request whose reply has not come: what it was for.
  enum class Role : uint8_t { select, restore, part, last, cleanup };
  struct Sent {
    PendingKey key;  // restore, last: the key to acknowledge; part: its name for errors
    Role role = Role::select;
    size_t bytes = 0;
  };
  std::deque<Sent> m_pending;
  // Bytes queued and not yet answered: bounded, so that big requests (a chunk of a big key,
  // a large payload) do not pile up in the output buffer.
  size_t m_unanswered_bytes = 0;
  WriteOutcome m_held = WriteOutcome::written;  // a last command's outcome, until its cleanup
  std::optional<uint64_t> m_db;
  AckFn m_on_ack;
  bool m_skip_conflicts = false;
  uint64_t m_bytes_sent = 0;
  std::vector<std::string_view> m_args;
};

}  // namespace keyshift::migrate

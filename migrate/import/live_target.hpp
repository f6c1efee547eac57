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
  bool command = false;   ///< sent by command(): `key` names the command
};

/// Redirects and retries a cluster target met, and the keys each primary acknowledged.
struct ClusterWriteStats {
  uint64_t moved = 0;      ///< MOVED replies (the slot's owner changed; the key was resent)
  uint64_t ask = 0;        ///< ASK replies (sent again once, after ASKING, to the named node)
  uint64_t retries = 0;    ///< TRYAGAIN / CLUSTERDOWN replies (backed off, sent again)
  uint64_t refreshes = 0;  ///< times the slot map was read again
  /// Per primary ("host:port"): keys acknowledged there.
  std::vector<std::pair<std::string, uint64_t>> keys_per_node;
};

/// Where RESTOREs go: one server (LiveTarget) or a cluster (ClusterTarget). Acknowledgements
/// come back in the order the keys were sent, whatever node answered first, so a caller's
/// checkpoint moves only past keys every node has acknowledged.
class RestoreTarget {
 public:
  /// Called for each key the target acknowledged, in the order sent.
  using AckFn = std::function<void(const PendingKey&, WriteOutcome)>;

  virtual ~RestoreTarget() = default;
  /// The server, as identified.
  virtual const TargetServer& server() const = 0;
  /// The endpoint (a cluster: its seed), for messages and checkpoints.
  virtual std::string describe() const = 0;
  /// Queues RESTORE of `payload` as `key` in `db`, absolute TTL `expire_ms` (-1: none),
  /// REPLACE when `replace`; `idle_s`/`freq` are kept when set (>= 0). Waits for replies
  /// while the window is full. A BUSYKEY reply is a skipped conflict when `skip_conflicts`,
  /// otherwise an error.
  virtual engine::Expected<bool, std::string> restore(PendingKey pending, int64_t expire_ms,
                                                      std::string_view payload, bool replace,
                                                      int64_t idle_s, int freq) = 0;
  /// Queues one command of a key written as commands (`pending.key` names it in errors);
  /// any error reply stops the import. Nothing is acknowledged by it. The default refuses:
  /// a target that takes keys by RESTORE only.
  virtual engine::Expected<bool, std::string> send_part(uint64_t db, std::string_view key,
                                                        std::span<const std::string_view> args);
  /// Queues the command that completes a key written as commands (RENAME, RENAMENX, SET):
  /// its reply acknowledges `pending`. A 0 or nil reply (RENAMENX, SET NX) is a conflict;
  /// "no such key" from a rename is a key whose TTL passed on the way. A `cleanup` command
  /// (DEL of a temporary key a refused RENAMENX left) follows it, and the key is
  /// acknowledged once that too is answered.
  virtual engine::Expected<bool, std::string> send_last(
      PendingKey pending, std::span<const std::string_view> args,
      std::span<const std::string_view> cleanup = {});
  /// Queues a command that names no key (FUNCTION LOAD, FLUSHALL) for the whole target:
  /// the server, or every primary of a cluster. Its reply acknowledges `pending`; an error
  /// reply is an error.
  virtual engine::Expected<bool, std::string> command_everywhere(
      PendingKey pending, std::span<const std::string_view> argv) = 0;
  /// Waits until every queued write is answered.
  virtual engine::Expected<bool, std::string> drain() = 0;
  /// Which of `keys` (in database `db`) exist in the target; the names in order.
  virtual engine::Expected<std::vector<std::string>, std::string> existing(
      uint64_t db, const std::vector<std::string>& keys) = 0;
  /// The only database the target has (a cluster: 0), or nothing when it has several.
  virtual std::optional<uint64_t> only_db() const { return std::nullopt; }
  /// A cluster's redirect counts and keys per node; nullptr for one server.
  virtual const ClusterWriteStats* cluster_stats() const { return nullptr; }

  /// CONFIG GET `name`'s value; nothing when the target refuses (CONFIG renamed or denied),
  /// or cannot say (a cluster).
  virtual engine::Expected<std::optional<std::string>, std::string> config_value(
      std::string_view name);

  /// Receives acknowledgements (set before the first restore).
  void on_ack(AckFn fn) { m_on_ack = std::move(fn); }
  /// Turns BUSYKEY into skipped conflicts instead of errors.
  void skip_conflicts(bool skip) { m_skip_conflicts = skip; }
  /// Bytes queued so far.
  uint64_t bytes_sent() const { return m_bytes_sent; }

 protected:
  AckFn m_on_ack;
  bool m_skip_conflicts = false;
  uint64_t m_bytes_sent = 0;
};

/// The arguments of RESTORE key ttl payload ABSTTL [REPLACE] [IDLETIME s | FREQ f] in `args`
/// (views into the arguments and `scratch`), as both targets send it.
void restore_args(std::vector<std::string_view>& args, std::string_view key, int64_t expire_ms,
                  std::string_view payload, bool replace, int64_t idle_s, int freq,
                  char (&scratch)[48]);

/// A RESTORE writer to one server.
class LiveTarget final : public RestoreTarget {
 public:
  /// Connects (HELLO/AUTH/SELECT as the endpoint says) and reads INFO server.
  /// A target still loading its dataset is waited for (`loading`).
  static engine::Expected<LiveTarget, std::string> open(const engine::RespEndpoint& endpoint,
                                                        uint32_t window,
                                                        const LoadingWait& loading = {});

  const TargetServer& server() const override { return m_server; }
  std::string describe() const override { return m_link.endpoint().describe(); }
  engine::Expected<bool, std::string> restore(PendingKey pending, int64_t expire_ms,
                                              std::string_view payload, bool replace,
                                              int64_t idle_s, int freq) override;
  /// Queues any command (a source's write command) in `db`, or in whatever database is
  /// selected when `db` is unset (MULTI, EXEC); its reply is matched to `pending`, whose
  /// `key` names the command in messages. An error reply is an error.
  engine::Expected<bool, std::string> command(PendingKey pending,
                                              std::span<const std::string_view> argv,
                                              std::optional<uint64_t> db);
  engine::Expected<bool, std::string> command_everywhere(
      PendingKey pending, std::span<const std::string_view> argv) override {
    return command(std::move(pending), argv, std::nullopt);
  }
  engine::Expected<bool, std::string> send_part(uint64_t db, std::string_view key,
                                                std::span<const std::string_view> args) override;
  engine::Expected<bool, std::string> send_last(
      PendingKey pending, std::span<const std::string_view> args,
      std::span<const std::string_view> cleanup = {}) override;
  engine::Expected<std::optional<std::string>, std::string> config_value(
      std::string_view name) override;
  engine::Expected<bool, std::string> drain() override;
  engine::Expected<std::vector<std::string>, std::string> existing(
      uint64_t db, const std::vector<std::string>& keys) override;

 private:
  LiveTarget(engine::PipelinedConnection link, TargetServer server);
  engine::Expected<bool, std::string> select(uint64_t db);
  engine::Expected<bool, std::string> take_replies(bool wait_all);

  engine::PipelinedConnection m_link;
  TargetServer m_server;
  engine::Expected<bool, std::string> room(size_t bytes);
  /// A request whose reply has not come: what it was for.
  enum class Role : uint8_t { select, restore, part, last, cleanup, command };
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
  std::vector<std::string_view> m_args;
};

}  // namespace keyshift::migrate

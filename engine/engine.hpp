#pragma once

#include "engine/commands/registry.hpp"
#include "engine/keyspace/db.hpp"
#include "engine/keyspace/notify.hpp"
#include "engine/propagation.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/server/config.hpp"
#include "engine/service_notifier.hpp"
#include "engine/session.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/memory.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

namespace acl {
class Users;
enum class LogContext : uint8_t;
}  // namespace acl
class Aof;
class ReplicationState;
class ReplicationPrimary;
class Blocking;
class ClientPause;
class Snapshots;
class PubSub;
class ScriptEngine;
class Tracking;
class WatchTable;

/// Server-wide counters that INFO stats reports.
struct EngineStats {
  uint64_t total_connections_received = 0;
  uint64_t total_commands_processed = 0;
  uint64_t rejected_connections = 0;
  uint64_t evicted_keys = 0;
  uint64_t evicted_clients = 0;
  uint64_t total_error_replies = 0;
  uint64_t unexpected_error_replies = 0;
  uint64_t total_net_input_bytes = 0;
  uint64_t total_net_output_bytes = 0;
  uint64_t expired_time_cap_reached_count = 0;
  uint64_t client_query_buffer_limit_disconnections = 0;
  uint64_t client_output_buffer_limit_disconnections = 0;
  uint64_t total_eviction_exceeded_time_us = 0;
  std::map<std::string, uint64_t> error_counts;  // per error code, for errorstats
};

/// Facts about the process the engine runs in, for INFO server.
struct ServerIdentity {
  std::string run_id;
  std::string executable;
  std::string config_file;
  int tcp_port = 0;
  int64_t start_time_ms = 0;
  std::string multiplexing_api = "none";
};

/// One SLOWLOG entry, as SLOWLOG GET returns it.
struct SlowLogEntry {
  uint64_t id = 0;
  int64_t time_sec = 0;
  int64_t duration_us = 0;
  std::vector<std::string> argv;  // trimmed as Valkey does (32 arguments, 128 bytes each)
  std::string peer;
  std::string client_name;
};

/// A rate sampled every 100 ms over the last 16 samples (Valkey's instantaneous metrics).
class InstantaneousMetric {
 public:
  /// Records the counter's `value` at monotonic time `now_us`.
  void track(uint64_t value, int64_t now_us);
  /// The mean rate per second over the kept samples.
  uint64_t per_second() const;
  /// Forgets every sample (CONFIG RESETSTAT).
  void reset() { *this = InstantaneousMetric{}; }

 private:
  static constexpr size_t k_samples = 16;
  int64_t m_last_us = 0;
  uint64_t m_last_value = 0;
  std::array<uint64_t, k_samples> m_samples{};
  size_t m_index = 0;
};

/// The cache engine: databases, command table and the sessions that use them. Executes
/// commands in-process; the network server is one host of its sessions. No global state,
/// so several engines can live in one process.
class Engine : public KeyspaceEvents {
 public:
  /// Creates an engine with `config`, reading time from `clock` (which must outlive it).
  Engine(EngineConfig config, const Clock& clock);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Opens a session; `host` may be nullptr for in-process use.
  Session& open_session(SessionHost* host);
  /// Closes a session and forgets it.
  void close_session(Session& session);
  /// Every open session, by id.
  const std::map<uint64_t, std::unique_ptr<Session>>& sessions() const { return m_sessions; }

  /// Executes one command for `session`, appending the reply to `session.out`.
  void execute(Session& session, std::span<const std::string_view> argv);
  /// Starts a batch of commands that share one wall-clock reading (the server calls this
  /// once per event-loop pass, as Valkey caches its time); `end_batch` drops it.
  void begin_batch() { m_batch_time_ms = m_clock.now_ms(); }
  void end_batch() { m_batch_time_ms = 0; }
  /// Executes one command and decodes its reply (for in-process use and tests).
  RespValue run(Session& session, std::span<const std::string_view> argv);
  /// Convenience: `run` on an internal session.
  RespValue run(std::initializer_list<std::string_view> argv);

  /// Periodic work (active expiry, incremental rehash, stats); call `config().hz` times
  /// per second.
  void cron();
  /// Frees memory by evicting keys per maxmemory-policy; false if still over the limit.
  bool perform_evictions();

  /// Database `index` (must be in range).
  Db& db(int index) { return *m_dbs[static_cast<size_t>(index)]; }
  int db_count() const { return static_cast<int>(m_dbs.size()); }
  EngineConfig& config() { return m_config; }
  const EngineConfig& config() const { return m_config; }
  const Clock& clock() const { return m_clock; }
  MemoryCounter& memory() { return m_memory; }
  KeyspaceShared& keyspace() { return m_keyspace; }
  CommandRegistry& registry() { return m_registry; }
  EngineStats& stats() { return m_stats; }
  ServerIdentity& identity() { return m_identity; }
  /// The replication role, history and link state.
  ReplicationState& replication() { return *m_replication; }
  const ReplicationState& replication() const { return *m_replication; }
  /// The replicas of this server, the backlog and the full-sync child.
  ReplicationPrimary& primary() { return *m_primary; }
  const ReplicationPrimary& primary() const { return *m_primary; }
  std::mt19937_64& rng() { return m_rng; }
  /// Bytes counted against maxmemory.
  uint64_t used_memory() const;
  /// Sessions in MONITOR mode.
  std::vector<Session*>& monitors() { return m_monitors; }
  /// Sends a MONITOR line for a command to every monitor.
  void feed_monitors(const Session& from, std::span<const std::string_view> argv);
  /// The client-output-buffer-limit class of `session`: pubsub while subscribed, normal
  /// otherwise (MONITOR included), replica for a replica of this server.
  ClientClass client_class(const Session& session) const;
  /// Valkey's checkClientOutputBufferLimits: true when `session`'s reply bytes reached its
  /// class's hard limit, or have stayed at its soft limit for more than the soft seconds
  /// (unix seconds of the injected clock; the start is kept in the session).
  bool output_buffer_limit_reached(Session& session);
  /// Valkey's closeClientOnOutputBufferLimitReached: when a networked `session` is over its
  /// limit, flags it close-asap (nothing more is added to its output and its host drops
  /// it), counts it for INFO and returns the client description for the log line; nullopt
  /// otherwise.
  std::optional<std::string> enforce_output_buffer_limit(Session& session);

  /// Host-facing: SHUTDOWN was requested by a command.
  bool shutdown_requested() const { return m_shutdown; }
  void request_shutdown(Session& from);
  /// Valkey's prepareForShutdown as far as keyshift goes: tells the service manager
  /// (STOPPING=1), stops a background save and saves when `save` or the save rules ask (not
  /// with `nosave`); the save's error, after which the server must stay up.
  std::optional<std::string> prepare_for_shutdown(bool save, bool nosave);
  /// The service manager to notify (nullptr: not supervised); the host owns it.
  void set_service_notifier(ServiceNotifier* notifier) { m_notifier = notifier; }
  ServiceNotifier* service_notifier() const { return m_notifier; }

  /// Commands per second, as INFO instantaneous_ops_per_sec.
  uint64_t instantaneous_ops_per_sec() const { return m_ops_metric.per_second(); }
  /// Network bytes per second read from / written to clients.
  uint64_t instantaneous_input_bytes_per_sec() const { return m_input_metric.per_second(); }
  uint64_t instantaneous_output_bytes_per_sec() const { return m_output_metric.per_second(); }
  /// The slow log, newest first.
  const std::deque<SlowLogEntry>& slowlog() const { return m_slowlog; }
  /// Empties the slow log (SLOWLOG RESET).
  void slowlog_reset() { m_slowlog.clear(); }
  /// Re-reads the settings the engine caches for speed (slowlog thresholds); call after
  /// the configuration changes.
  void refresh_settings();
  /// CONFIG RESETSTAT: clears the server, keyspace, command and error counters.
  void reset_stats();
  /// A key expired (lazily or by the active cycle): WATCH and the "expired" event see it.
  void on_expired(int db, std::string_view key) override;
  void on_new_key(int db, std::string_view key) override;
  void on_key_miss(int db, std::string_view key) override;

  // --- Change signals: every write calls these so WATCH, keyspace notifications and
  // --- blocked clients see it (Valkey's signalModifiedKey / notifyKeyspaceEvent /
  // --- signalKeyAsReady). Implemented with the connection features.
  /// `key` in `db` changed (invalidates WATCH). `changes` is what the write adds to the
  /// changes since the last save, as Valkey counts server.dirty: one per element for pushes,
  /// adds and removals, none for the destination of a move that counted its source.
  void signal_modified_key(int db, std::string_view key, uint64_t changes = 1);
  /// Emits keyspace/keyevent notification `event` of class `type` (NotifyClass bits).
  void notify_keyspace_event(uint32_t type, std::string_view event, std::string_view key, int db);
  /// `key` in `db` may now serve clients blocked on it (after a push/add).
  void signal_key_as_ready(int db, std::string_view key);
  /// Database `db` is about to be emptied (FLUSHDB/FLUSHALL): WATCH sees its keys change.
  void signal_flushed_db(int db);
  /// SWAPDB: swaps the contents of two databases, telling WATCH and blocked clients.
  void swap_databases(int a, int b);

  // --- ACL users (engine/acl): who may run what.
  acl::Users& users() { return *m_users; }
  /// Why the `user` lines or the aclfile could not be loaded when the engine started (the
  /// server stops on it, as Valkey exits); empty when they loaded.
  const std::string& acl_startup_error() const { return m_acl_startup_error; }
  /// Why the `rename-command` lines of the config could not be applied (only for a config
  /// that did not come through the file reader, which checks them); empty when they were.
  const std::string& config_startup_error() const { return m_config_startup_error; }
  /// Valkey's authRequired(): the default user has a password or is off, and `session` has
  /// not authenticated.
  bool auth_required(const Session& session) const;
  /// Authenticates `session` as `user` with `password` (ACLAuthenticateUser): false after
  /// logging the failure in the ACL log under `command` (AUTH or HELLO, as typed).
  bool authenticate(Session& session, std::string_view user, std::string_view password,
                    std::string_view command = "AUTH");
  /// Puts `session` back on the default user, authenticated when it needs no password.
  void set_default_auth(Session& session);
  /// ACLCheckAllPerm for `session` running `cmd`: empty when allowed, otherwise the error
  /// text (without "NOPERM ") after the refusal was logged in `context`.
  std::optional<std::string> acl_check(Session& session, const Command& cmd,
                                       std::span<const std::string_view> argv,
                                       acl::LogContext context);
  /// True when `session`'s user may still have every subscription it holds (ACL SETUSER and
  /// ACL LOAD close the subscribers whose channels were taken away).
  bool subscriptions_allowed(const Session& session) const;
  /// Closes every session authenticated as `user` (ACL DELUSER, ACL LOAD); the current one
  /// after its reply. Their user becomes the default one, unauthenticated.
  void drop_user_sessions(const acl::User* user, Session* current);
  /// ACL LOAD: the aclfile's users replace the table; Valkey's error text otherwise.
  std::optional<std::string> acl_load(Session* current);
  /// ACL SAVE: the users written to the aclfile; false when the file could not be written.
  bool acl_save(std::string& error);
  /// Valkey's catClientInfoString for `session` running `cmd` (CLIENT LIST's line), as the
  /// ACL log keeps it.
  std::string client_info(Session& session, const Command& cmd,
                          std::span<const std::string_view> argv);

  // --- Connection features: transactions, pub/sub, blocking commands.
  PubSub& pubsub() { return *m_pubsub; }
  WatchTable& watches() { return *m_watches; }
  Blocking& blocking() { return *m_blocking; }
  /// Client-side caching: the tracking table and invalidation messages.
  Tracking& tracking() { return *m_tracking; }
  /// True while a command's handler runs (Valkey's executing_command): what it sends its
  /// own client waits for its reply; what happens before (eviction) goes out first.
  bool executing() const { return m_call_depth > 0; }
  /// CLIENT PAUSE: held commands, frozen expiry and eviction.
  ClientPause& pauses() { return *m_pauses; }
  /// RDB snapshot state: SAVE/BGSAVE, the change counter, the save rules.
  Snapshots& snapshots() { return *m_snapshots; }
  /// The append-only file (off unless appendonly yes).
  Aof& aof() { return *m_aof; }
  const Aof& aof() const { return *m_aof; }
  /// Hands the AOF its buffered writes before replies leave (the host calls this before it
  /// flushes client output, as Valkey's beforeSleep writes the AOF first).
  void before_replies();

  // --- Propagation: the effects of every executed write go to each sink (the AOF, later
  // --- a replication stream), one unit per top-level command.
  void add_propagation_sink(PropagationSink* sink);
  void remove_propagation_sink(PropagationSink* sink);
  /// Units propagated so far (what a sink and WAITAOF count in).
  uint64_t propagation_offset() const { return m_propagation_offset; }
  /// Propagates `argv` in `db` as a unit of its own now (deletions of expired and evicted
  /// keys).
  void propagate_now(int db, std::vector<std::string> argv);
  /// EVAL scripts and function libraries (the Lua states and their caches).
  ScriptEngine& scripting() { return *m_scripting; }
  /// Runs `cmd` for `session` once dispatch accepted it (EXEC runs its queue through this,
  /// and a blocked command runs again with `reprocessing`), then counts it as Valkey's
  /// call(): command stats, slow log, MONITOR. A command that blocked is counted when it
  /// replies.
  void call(Session& session, Command& cmd, std::span<const std::string_view> argv,
            bool reprocessing = false);
  /// Leaves MULTI and forgets the queue and every WATCH (Valkey's discardTransaction).
  void discard_transaction(Session& session);
  /// RESET / disconnect: leaves MULTI, unwatches, unsubscribes everything, stops blocking.
  void reset_connection_state(Session& session);
  /// Serves clients blocked on keys signalled ready; runs after every command.
  void handle_blocked_clients();
  /// Replies to blocked clients whose timeout has passed, and runs the commands CLIENT PAUSE
  /// held once it ends (the host calls this every loop).
  void handle_blocked_timeouts();
  /// The nearest deadline of a blocked client (or of a pause holding commands) in unix ms,
  /// or -1 when none has one.
  int64_t next_block_deadline_ms() const;
  /// CLIENT UNBLOCK: unblocks session `id` as a timeout or with the UNBLOCKED error; false
  /// when there is no such blocked client.
  bool unblock_client(uint64_t id, bool with_error);
  /// The entry for `key` in `db` even when logically expired (Valkey's dbFind), untouched.
  Entry* find_entry_raw(int db, std::string_view key);
  /// True when `key` exists in `db` but its TTL has passed (Valkey's keyIsExpired).
  bool key_is_expired(int db, std::string_view key);

 private:
  void dispatch(Session& session, std::span<const std::string_view> argv);
  void reject(Session& session, Command* cmd, std::string_view error,
              std::span<const std::string_view> argv);
  void slowlog_push(const Session& session, std::span<const std::string_view> argv,
                    int64_t duration_us);
  void flush_unit(Session& session);
  // The `user` lines, then the aclfile (Valkey's ACLLoadUsersAtStartup); failures go to
  // m_acl_startup_error.
  void load_users_at_startup();
  // Applies the config's rename-command lines to the command table.
  void apply_renamed_commands();

  EngineConfig m_config;
  const Clock& m_clock;
  MemoryCounter m_memory;
  std::mt19937_64 m_rng;
  KeyspaceShared m_keyspace;
  std::vector<std::unique_ptr<Db>> m_dbs;
  CommandRegistry m_registry;
  EngineStats m_stats;
  ServerIdentity m_identity;
  ServiceNotifier* m_notifier = nullptr;
  std::unique_ptr<ReplicationState> m_replication;
  std::unique_ptr<ReplicationPrimary> m_primary;
  std::map<uint64_t, std::unique_ptr<Session>> m_sessions;
  std::unique_ptr<PubSub> m_pubsub;
  std::unique_ptr<WatchTable> m_watches;
  std::unique_ptr<Blocking> m_blocking;
  std::unique_ptr<Tracking> m_tracking;
  std::unique_ptr<ClientPause> m_pauses;
  uint64_t m_tracking_max_keys = 1000000;  // tracking-table-max-keys
  // Expiry and eviction change keys on nobody's behalf (no NOLOOP, no BCAST sender).
  bool m_change_by_server = false;
  std::unique_ptr<Snapshots> m_snapshots;
  std::unique_ptr<Aof> m_aof;
  std::vector<PropagationSink*> m_sinks;
  std::vector<PropagatedCommand> m_unit;  // effects of the running top-level command
  uint64_t m_propagation_offset = 0;
  int m_call_depth = 0;
  bool m_force_propagation = false;  // FLUSHALL/FLUSHDB/SWAPDB propagate even with no change
  std::unique_ptr<ScriptEngine> m_scripting;
  std::unique_ptr<acl::Users> m_users;
  std::string m_acl_startup_error;
  std::string m_config_startup_error;
  std::string m_applied_requirepass;  // what the default user's password was last set from
  // Commands dispatch treats specially (MULTI queueing, subscribed-mode rules).
  struct SpecialCommands {
    Command* exec = nullptr;
    Command* discard = nullptr;
    Command* multi = nullptr;
    Command* watch = nullptr;
    Command* quit = nullptr;
    Command* reset = nullptr;
    Command* ping = nullptr;
    Command* subscribe = nullptr;
    Command* unsubscribe = nullptr;
    Command* psubscribe = nullptr;
    Command* punsubscribe = nullptr;
    Command* ssubscribe = nullptr;
    Command* sunsubscribe = nullptr;
  } m_special;
  uint64_t m_next_session_id = 1;
  Session* m_internal = nullptr;
  std::vector<Session*> m_monitors;
  bool m_shutdown = false;
  size_t m_expire_db_cursor = 0;
  int64_t m_batch_time_ms = 0;
  InstantaneousMetric m_ops_metric;
  InstantaneousMetric m_input_metric;
  InstantaneousMetric m_output_metric;
  int64_t m_next_metric_us = 0;
  std::deque<SlowLogEntry> m_slowlog;
  uint64_t m_slowlog_next_id = 0;
  int64_t m_slowlog_slower_than_us = 10000;  // slowlog-log-slower-than; < 0 disables
  uint64_t m_slowlog_max_len = 128;          // slowlog-max-len
};

}  // namespace keyshift::engine

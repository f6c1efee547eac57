#include "engine/engine.hpp"

#include "engine/acl/acl.hpp"
#include "engine/blocking.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/effects.hpp"
#include "engine/commands/errors.hpp"
#include "engine/commands/hash_family.hpp"
#include "engine/memory_usage.hpp"
#include "engine/pause.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/pubsub.hpp"
#include "engine/repl/primary.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/server/config_table.hpp"
#include "engine/tracking.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"
#include "engine/watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace keyshift::engine {
namespace {

/// replica-read-only (kept as a setting; read when a replica is asked to write).
bool replica_read_only(const EngineConfig& config) {
  const DirectiveSpec* spec = find_directive("replica-read-only");
  return spec == nullptr || directive_value(*spec, config) != "no";
}

std::string random_hex(std::mt19937_64& rng, size_t len) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string s(len, '0');
  for (char& c : s) {
    c = k_hex[rng() & 15];
  }
  return s;
}

bool is_volatile(EvictionPolicy p) {
  return p == EvictionPolicy::volatile_lru || p == EvictionPolicy::volatile_lfu ||
         p == EvictionPolicy::volatile_random || p == EvictionPolicy::volatile_ttl;
}

}  // namespace

Engine::Engine(EngineConfig config, const Clock& clock)
    : m_config(std::move(config)), m_clock(clock), m_rng(std::random_device{}()) {
  m_keyspace.memory = &m_memory;
  m_keyspace.clock = &m_clock;
  m_keyspace.settings = &m_config;
  m_keyspace.events = this;
  m_keyspace.rng = &m_rng;
  int n = m_config.databases > 0 ? m_config.databases : 16;
  for (int i = 0; i < n; ++i) {
    m_dbs.push_back(std::make_unique<Db>(i, m_keyspace, m_rng()));
  }
  register_all_families(m_registry);
  m_pubsub = std::make_unique<PubSub>();
  m_watches = std::make_unique<WatchTable>(*this);
  m_blocking = std::make_unique<Blocking>(*this);
  m_tracking = std::make_unique<Tracking>(*this);
  m_pauses = std::make_unique<ClientPause>(*this);
  m_snapshots = std::make_unique<Snapshots>(m_clock.now_ms() / 1000);
  m_aof = std::make_unique<Aof>(*this);
  m_scripting = std::make_unique<ScriptEngine>(*this);
  m_users = std::make_unique<acl::Users>(m_registry);
  m_special.exec = m_registry.find("exec");
  m_special.discard = m_registry.find("discard");
  m_special.multi = m_registry.find("multi");
  m_special.watch = m_registry.find("watch");
  m_special.quit = m_registry.find("quit");
  m_special.reset = m_registry.find("reset");
  m_special.ping = m_registry.find("ping");
  m_special.subscribe = m_registry.find("subscribe");
  m_special.unsubscribe = m_registry.find("unsubscribe");
  m_special.psubscribe = m_registry.find("psubscribe");
  m_special.punsubscribe = m_registry.find("punsubscribe");
  m_special.ssubscribe = m_registry.find("ssubscribe");
  m_special.sunsubscribe = m_registry.find("sunsubscribe");
  apply_renamed_commands();
  m_identity.run_id = random_hex(m_rng, 40);
  m_identity.start_time_ms = m_clock.now_ms();
  m_identity.tcp_port = m_config.port;
  m_identity.config_file = m_config.config_file;
  m_replication = std::make_unique<ReplicationState>(random_hex(m_rng, 40));
  m_primary = std::make_unique<ReplicationPrimary>(*this);
  refresh_settings();
  load_users_at_startup();
}

void Engine::apply_renamed_commands() {
  for (const CommandRenameLine& r : m_config.renamed_commands) {
    RenameStatus status = m_registry.rename(r.from, r.to);
    if (status != RenameStatus::ok && m_config_startup_error.empty()) {
      m_config_startup_error =
          fmt::format("{}:{}: {}", r.file, r.line,
                      status == RenameStatus::no_such_command ? errors::k_rename_no_such_command
                                                              : errors::k_rename_target_exists);
    }
  }
}

void InstantaneousMetric::track(uint64_t value, int64_t now_us) {
  if (m_last_us > 0) {
    int64_t span = now_us - m_last_us;
    m_samples[m_index] =
        span > 0 ? (value - m_last_value) * 1000000 / static_cast<uint64_t>(span) : 0;
    m_index = (m_index + 1) % k_samples;
  }
  m_last_us = now_us;
  m_last_value = value;
}

uint64_t InstantaneousMetric::per_second() const {
  uint64_t sum = 0;
  for (uint64_t v : m_samples) {
    sum += v;
  }
  return sum / k_samples;
}

void Engine::refresh_settings() {
  auto number = [&](std::string_view name, int64_t fallback) {
    const DirectiveSpec* spec = find_directive(name);
    int64_t v = 0;
    return spec != nullptr && parse_i64(directive_value(*spec, m_config), v) ? v : fallback;
  };
  m_slowlog_slower_than_us = number("slowlog-log-slower-than", 10000);
  m_slowlog_max_len = static_cast<uint64_t>(std::max<int64_t>(0, number("slowlog-max-len", 128)));
  while (m_slowlog.size() > m_slowlog_max_len) {
    m_slowlog.pop_back();
  }
  m_scripting->set_busy_threshold_ms(number("busy-reply-threshold", 5000));
  m_primary->refresh_settings();
  m_users->set_pubsub_default_all(
      directive_value(*find_directive("acl-pubsub-default"), m_config) == "allchannels");
  m_users->set_log_max_len(
      static_cast<uint64_t>(std::max<int64_t>(0, number("acllog-max-len", 128))));
  // requirepass is the default user's password, set again whenever it changes (Valkey's
  // ACLUpdateDefaultUserPassword); at start the `user` lines come after it.
  if (m_config.requirepass != m_applied_requirepass) {
    m_users->set_default_password(m_config.requirepass);
    m_applied_requirepass = m_config.requirepass;
  }
  m_tracking_max_keys =
      static_cast<uint64_t>(std::max<int64_t>(0, number("tracking-table-max-keys", 1000000)));
}

void Engine::reset_stats() {
  m_stats = EngineStats{};
  m_users->denied_auth = m_users->denied_cmd = m_users->denied_key = m_users->denied_channel = 0;
  m_keyspace.keyspace_hits = 0;
  m_keyspace.keyspace_misses = 0;
  m_keyspace.expired_keys = 0;
  m_keyspace.expired_stale_perc_permille = 0;
  m_keyspace.expire_cycle_time_used_us = 0;
  m_registry.reset_stats();
  m_ops_metric.reset();
  m_input_metric.reset();
  m_output_metric.reset();
}

void Engine::slowlog_push(const Session& session, std::span<const std::string_view> argv,
                          int64_t duration_us) {
  // Valkey keeps at most 32 arguments (the last one says how many were left out) and
  // 128 bytes of each.
  constexpr size_t k_max_argc = 32;
  constexpr size_t k_max_string = 128;
  SlowLogEntry e;
  e.id = m_slowlog_next_id++;
  e.time_sec = m_clock.now_ms() / 1000;
  e.duration_us = duration_us;
  size_t n = std::min(argv.size(), k_max_argc);
  for (size_t i = 0; i < n; ++i) {
    if (n != argv.size() && i == n - 1) {
      e.argv.push_back("... (" + std::to_string(argv.size() - n + 1) + " more arguments)");
    } else if (argv[i].size() > k_max_string) {
      e.argv.push_back(std::string(argv[i].substr(0, k_max_string)) + "... (" +
                       std::to_string(argv[i].size() - k_max_string) + " more bytes)");
    } else {
      e.argv.emplace_back(argv[i]);
    }
  }
  e.peer = session.addr;
  e.client_name = session.name;
  m_slowlog.push_front(std::move(e));
}

Engine::~Engine() {
  m_aof.reset();
  m_primary->shutdown();
  m_sinks.clear();
  m_scripting.reset();
  m_sessions.clear();
  m_dbs.clear();
}

Session& Engine::open_session(SessionHost* host) {
  auto s = std::make_unique<Session>(m_next_session_id++, host);
  s->created_ms = m_clock.now_ms();
  s->last_interaction_ms = s->created_ms;
  if (host == nullptr) {
    // The engine's own clients (AOF loading, verify, import) run anything, as Valkey's
    // clients without a user do; AUTH still makes one a user.
    s->set(k_session_in_process);
    s->authenticated = true;
  } else {
    set_default_auth(*s);
  }
  Session& ref = *s;
  m_sessions.emplace(ref.id(), std::move(s));
  return ref;
}

void Engine::close_session(Session& session) {
  reset_connection_state(session);
  m_primary->forget(session);
  m_pauses->forget(session);
  std::erase(m_monitors, &session);
  if (&session == m_internal) {
    m_internal = nullptr;
  }
  m_sessions.erase(session.id());
}

uint64_t Engine::used_memory() const {
  return startup_memory(*this) + clients_state_memory(*this) + m_memory.used();
}

void Engine::on_expired(int db, std::string_view key) {
  // As Valkey's deleteExpiredKeyAndPropagate: the event first, then WATCH, then the
  // deletion goes to the AOF and replicas ahead of the command that found the key expired.
  notify_keyspace_event(k_notify_expired, "expired", key, db);
  m_change_by_server = true;
  signal_modified_key(db, key);
  m_change_by_server = false;
  if (!m_sinks.empty()) {
    bool lazy = directive_value(*find_directive("lazyfree-lazy-expire"), m_config) == "yes";
    propagate_now(db, {lazy ? "UNLINK" : "DEL", std::string(key)});
  }
}

void Engine::add_propagation_sink(PropagationSink* sink) {
  if (std::find(m_sinks.begin(), m_sinks.end(), sink) == m_sinks.end()) {
    m_sinks.push_back(sink);
  }
}

void Engine::remove_propagation_sink(PropagationSink* sink) {
  std::erase(m_sinks, sink);
}

void Engine::propagate_now(int db, std::vector<std::string> argv) {
  if (m_sinks.empty()) {
    return;
  }
  PropagatedCommand c{db, std::move(argv)};
  ++m_propagation_offset;
  for (PropagationSink* sink : m_sinks) {
    sink->propagate(std::span<const PropagatedCommand>(&c, 1));
  }
}

void Engine::flush_unit(Session& session) {
  if (m_unit.empty()) {
    return;
  }
  ++m_propagation_offset;
  for (PropagationSink* sink : m_sinks) {
    sink->propagate(m_unit);
  }
  session.woff = m_propagation_offset;
  session.repl_woff = m_replication->offset();
  m_unit.clear();
}

void Engine::before_replies() {
  m_aof->flush(false);
  m_primary->before_replies();
  m_tracking->broadcast();
}

void Engine::signal_modified_key(int db, std::string_view key, uint64_t changes) {
  m_snapshots->note_changes(changes);
  m_watches->touch(db, key);
  m_blocking->signal_key_changed(db, key);
  m_tracking->invalidate_key(key, m_change_by_server ? nullptr : m_tracking->current());
}

void Engine::on_new_key(int db, std::string_view key) {
  notify_keyspace_event(k_notify_new, "new", key, db);
}

void Engine::on_key_miss(int db, std::string_view key) {
  notify_keyspace_event(k_notify_key_miss, "keymiss", key, db);
}

void Engine::notify_keyspace_event(uint32_t type, std::string_view event, std::string_view key,
                                   int db) {
  uint32_t enabled = m_config.notify_keyspace_events;
  if ((enabled & type) == 0) {
    return;
  }
  std::string channel;
  std::string db_text = std::to_string(db);
  if ((enabled & k_notify_keyspace) != 0) {
    channel.reserve(16 + db_text.size() + key.size());
    channel.append("__keyspace@").append(db_text).append("__:").append(key);
    m_pubsub->publish(channel, event, false);
  }
  if ((enabled & k_notify_keyevent) != 0) {
    channel.clear();
    channel.append("__keyevent@").append(db_text).append("__:").append(event);
    m_pubsub->publish(channel, key, false);
  }
}

void Engine::signal_key_as_ready(int db, std::string_view key) {
  m_blocking->signal_ready(db, key);
}

void Engine::signal_flushed_db(int db) {
  m_force_propagation = true;
  m_watches->touch_all_in_db(db, -1);
  m_blocking->signal_db_changed(db);
}

void Engine::swap_databases(int a, int b) {
  m_force_propagation = true;
  if (a == b) {
    return;
  }
  m_watches->touch_all_in_db(a, b);
  m_watches->touch_all_in_db(b, a);
  db(a).swap_contents(db(b));
  // A client blocked on a key of one database may find it in the swapped-in contents.
  m_blocking->signal_existing_keys(a);
  m_blocking->signal_existing_keys(b);
  m_blocking->signal_db_changed(a);
  m_blocking->signal_db_changed(b);
}

Entry* Engine::find_entry_raw(int db_index, std::string_view key) {
  // A time before every TTL, so the lookup neither reclaims nor hides the key.
  int64_t saved = m_keyspace.command_time_ms;
  m_keyspace.command_time_ms = 1;
  Entry* e = db(db_index).lookup(key, false);
  m_keyspace.command_time_ms = saved;
  return e;
}

bool Engine::key_is_expired(int db_index, std::string_view key) {
  Entry* e = find_entry_raw(db_index, key);
  return e != nullptr && db(db_index).is_expired(e);
}

void Engine::discard_transaction(Session& session) {
  session.multi_queue.clear();
  session.multi_cmd_flags = 0;
  session.clear(k_session_multi);
  session.clear(k_session_dirty_cas);
  session.clear(k_session_dirty_exec);
  m_watches->unwatch_all(session);
}

void Engine::reset_connection_state(Session& session) {
  discard_transaction(session);
  m_blocking->forget(session);
  m_pubsub->unsubscribe_all(session);
  session.clear(k_session_pubsub);
  m_tracking->disable(session);
}

void Engine::handle_blocked_clients() {
  if (m_blocking->has_ready()) {
    m_blocking->serve_ready();
  }
}

void Engine::handle_blocked_timeouts() {
  m_pauses->update();
  if (m_blocking->next_deadline_ms() < 0) {
    return;
  }
  int64_t saved = m_keyspace.command_time_ms;
  m_keyspace.command_time_ms = m_clock.now_ms();
  m_blocking->handle_timeouts(m_keyspace.command_time_ms);
  m_keyspace.command_time_ms = saved;
}

int64_t Engine::next_block_deadline_ms() const {
  int64_t blocked = m_blocking->next_deadline_ms();
  int64_t pause = m_pauses->next_end_ms();
  return blocked < 0 ? pause : pause < 0 ? blocked : std::min(blocked, pause);
}

bool Engine::unblock_client(uint64_t id, bool with_error) {
  auto it = m_sessions.find(id);
  return it != m_sessions.end() && m_blocking->unblock(*it->second, with_error);
}

void Engine::reject(Session& session, Command* cmd, std::string_view error,
                    std::span<const std::string_view> argv) {
  if (cmd != nullptr) {
    ++cmd->stats.rejected_calls;
  }
  ReplyBuilder rb(session.out, session.resp);
  if (cmd != nullptr && cmd == m_special.exec) {
    // EXEC itself refused (OOM for its queue, ...): the transaction is dropped, and MONITOR
    // sees the EXEC that closes the MULTI it already showed.
    discard_transaction(session);
    // Valkey words these refusals without the generic "ERR " code ("wrong number of
    // arguments ...") and adds it only for a plain reply, so the reason quoted after
    // EXECABORT lacks it; errors with their own code (OOM, NOAUTH) keep theirs.
    std::string_view reason = error;
    if (reason.starts_with(errors::k_generic_error_code)) {
      reason.remove_prefix(errors::k_generic_error_code.size());
    }
    std::string text(errors::k_execabort_because_prefix);
    text += reason;
    rb.error(text);
    if (!m_monitors.empty()) {
      feed_monitors(session, argv);
    }
  } else {
    // A command refused while queueing dooms the transaction (Valkey's flagTransaction).
    if (session.has(k_session_multi)) {
      session.set(k_session_dirty_exec);
      session.multi_queue.clear();
      session.multi_cmd_flags = 0;
    }
    rb.error(error);
  }
  ++m_stats.total_error_replies;
  ++m_stats.error_counts[std::string(rb.last_error_code())];
}

void Engine::execute(Session& session, std::span<const std::string_view> argv) {
  if (argv.empty()) {
    return;
  }
  // A busy script's command is still running when other clients are served: its time stays.
  int64_t outer_time_ms = m_keyspace.command_time_ms;
  m_keyspace.command_time_ms = m_batch_time_ms != 0 ? m_batch_time_ms : m_clock.now_ms();
  // CLIENT REPLY OFF/SKIP: the reply is produced and then dropped, as Valkey refuses to
  // queue it; CLIENT REPLY ON's own OK survives because it clears both flags first (also
  // when it is the command a SKIP silences).
  if (session.has(k_session_reply_skip_next)) {
    session.clear(k_session_reply_skip_next);
    session.set(k_session_reply_skip_current);
  }
  size_t mark = session.out.size();
  // A replica's output is the stream: what it sends (REPLCONF ACK) is answered by nothing,
  // as Valkey never queues a reply for a replica client.
  bool replica = session.has(k_session_replica);
  m_pubsub->set_current(&session);
  m_tracking->set_current(&session);
  if (m_tracking->clients() != 0) {
    m_tracking->limit_table(m_tracking_max_keys);
  }
  dispatch(session, argv);
  // CLIENT CACHING covers the next command, or the next transaction (Valkey's resetClient).
  if (!session.has(k_session_multi) && !iequals(argv[0], "client")) {
    session.clear(k_session_tracking_caching);
  }
  if (session.replies_silenced() || replica) {
    session.out.resize(mark);
  }
  session.clear(k_session_reply_skip_current);
  if (!session.kept_pushes.empty()) {
    session.out += session.kept_pushes;
    session.kept_pushes.clear();
  }
  // Messages the command published to its own client come after its reply.
  m_pubsub->flush_pending();
  m_pubsub->set_current(nullptr);
  m_tracking->set_current(nullptr);
  // As Valkey's processCommand: clients blocked on keys this command made ready are served
  // right after it (after the whole transaction for EXEC).
  handle_blocked_clients();
  m_keyspace.command_time_ms = outer_time_ms;
}

void Engine::dispatch(Session& session, std::span<const std::string_view> argv) {
  session.last_interaction_ms = m_keyspace.command_time_ms;
  Command* cmd = m_registry.find(argv[0]);
  // As Valkey's lookupCommand: with an argument, a command that has subcommands (CONFIG,
  // and also COMMAND, which runs alone too) resolves to one of them.
  if (cmd != nullptr && (cmd->is_container() || !cmd->subcommands.empty()) &&
      (argv.size() >= 2 || cmd->is_container())) {
    Command* sub = argv.size() >= 2 ? m_registry.find_sub(*cmd, argv[1]) : nullptr;
    if (sub == nullptr) {
      std::string err;
      if (argv.size() < 2) {
        err = "ERR wrong number of arguments for '" + cmd->full_name + "' command";
      } else {
        err = "ERR unknown subcommand '" + std::string(argv[1].substr(0, 128)) + "'. Try " +
              to_upper(argv[0]) + " HELP.";
      }
      for (char& c : err) {
        if (c == '\r' || c == '\n') {
          c = ' ';
        }
      }
      reject(session, nullptr, err, argv);
      return;
    }
    cmd = sub;
  }
  if (cmd == nullptr) {
    // Valkey prints these with %s, so each stops at a NUL byte.
    auto c_string = [](std::string_view s, size_t max) {
      s = s.substr(0, s.find('\0'));
      return s.substr(0, max);
    };
    std::string args;
    for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
      size_t room = 128 - args.size();
      args += '\'';
      args += c_string(argv[i], room);
      args += "' ";
    }
    std::string err = "ERR unknown command '" + std::string(c_string(argv[0], 128)) +
                      "', with args beginning with: " + args;
    for (char& c : err) {
      if (c == '\r' || c == '\n') {
        c = ' ';
      }
    }
    reject(session, nullptr, err, argv);
    return;
  }
  const CommandSpec& spec = cmd->spec;
  int argc = static_cast<int>(argv.size());
  if ((spec.arity > 0 && spec.arity != argc) || argc < -spec.arity) {
    reject(session, cmd, "ERR wrong number of arguments for '" + cmd->full_name + "' command",
           argv);
    return;
  }
  if (m_scripting->busy() && (spec.flags & k_cmd_allow_busy) == 0) {
    reject(session, cmd, m_scripting->busy_error(), argv);
    return;
  }
  if ((spec.flags & k_cmd_protected) != 0) {
    // DEBUG answers to enable-debug-command, MODULE LOAD/LOADEX/UNLOAD to
    // enable-module-command (Valkey's processCommand).
    bool module = cmd->parent != nullptr && cmd->parent->full_name == "module";
    EnableMode mode = module ? m_config.enable_module_command : m_config.enable_debug_command;
    bool allowed = mode == EnableMode::yes || (mode == EnableMode::local && is_local(session));
    if (!allowed) {
      reject(session, cmd, module ? errors::k_module_not_allowed : errors::k_debug_not_allowed,
             argv);
      return;
    }
  }
  if (auth_required(session) && (spec.flags & k_cmd_no_auth) == 0) {
    reject(session, cmd, errors::k_noauth, argv);
    return;
  }
  bool in_multi = session.has(k_session_multi);
  if (in_multi && (spec.flags & k_cmd_no_multi) != 0) {
    reject(session, cmd, errors::k_multi_not_allowed, argv);
    return;
  }
  if (session.user != nullptr && !acl::Users::unrestricted(*session.user)) {
    auto denied = acl_check(session, *cmd, argv,
                            in_multi ? acl::LogContext::multi : acl::LogContext::toplevel);
    if (denied) {
      reject(session, cmd, "NOPERM " + *denied, argv);
      return;
    }
  }
  bool is_exec = cmd == m_special.exec;
  if (m_config.maxmemory != 0) {
    bool oom = !perform_evictions();
    // EXEC is judged by the commands it queued.
    uint32_t flags = spec.flags | (is_exec ? session.multi_cmd_flags : 0);
    if (oom && (flags & k_cmd_denyoom) != 0) {
      reject(session, cmd, errors::k_oom, argv);
      return;
    }
  }
  // A failed background save stops writes (and PING) while save rules ask for snapshots,
  // so that data the operator believes persisted is not silently piling up.
  if (m_config.stop_writes_on_bgsave_error && !m_config.save.empty() &&
      !session.has(k_session_primary) && !m_snapshots->last_bgsave_ok() &&
      (((spec.flags | (is_exec ? session.multi_cmd_flags : 0)) & k_cmd_write) != 0 ||
       cmd == m_special.ping)) {
    reject(session, cmd, errors::k_misconf_bgsave, argv);
    return;
  }
  // min-replicas-to-write: a write waits for enough replicas with a recent ACK.
  if (((spec.flags | (is_exec ? session.multi_cmd_flags : 0)) & k_cmd_write) != 0 &&
      !session.has(k_session_primary) && !m_primary->enough_good_replicas()) {
    reject(session, cmd, errors::k_noreplicas, argv);
    return;
  }
  // While a full sync's payload loads the dataset is half old, half new: commands without
  // the loading flag wait, as during Valkey's (blocking) load.
  if (m_replication->state() == ReplLinkState::sync && m_replication->sync_loading() &&
      !session.has(k_session_primary) && (spec.flags & k_cmd_loading) == 0) {
    reject(session, cmd, errors::k_loading, argv);
    return;
  }
  // A replica takes writes only from its primary (Valkey's processCommand: the primary's
  // link obeys unconditionally).
  if (m_replication->is_replica() && !session.has(k_session_primary) &&
      replica_read_only(m_config) &&
      ((spec.flags | (is_exec ? session.multi_cmd_flags : 0)) & k_cmd_write) != 0) {
    reject(session, cmd, errors::k_readonly_replica, argv);
    return;
  }
  if (session.has(k_session_pubsub) && session.resp == 2 && cmd != m_special.ping &&
      cmd != m_special.subscribe && cmd != m_special.ssubscribe && cmd != m_special.unsubscribe &&
      cmd != m_special.sunsubscribe && cmd != m_special.psubscribe &&
      cmd != m_special.punsubscribe && cmd != m_special.quit && cmd != m_special.reset) {
    reject(session, cmd,
           "ERR Can't execute '" + cmd->full_name + std::string(errors::k_pubsub_context_suffix),
           argv);
    return;
  }
  if (!session.has(k_session_pubsub) &&
      (cmd == m_special.unsubscribe || cmd == m_special.sunsubscribe ||
       cmd == m_special.punsubscribe)) {
    reject(session, cmd, "NOSUB '" + cmd->full_name + "' command executed not in subscribed mode",
           argv);
    return;
  }
  // CLIENT PAUSE holds the command, unanswered, until the pause ends (Valkey's
  // blockPostponeClient).
  if (m_pauses->active() && m_pauses->holds(m_pauses->command_flags(*cmd, argv) |
                                            (is_exec ? session.multi_cmd_flags : 0))) {
    m_pauses->postpone(session, argv);
    return;
  }
  if (in_multi && !is_exec && cmd != m_special.discard && cmd != m_special.multi &&
      cmd != m_special.watch && cmd != m_special.quit && cmd != m_special.reset) {
    // A transaction already doomed keeps no more commands, but still answers QUEUED.
    if (!session.has(k_session_dirty_cas) && !session.has(k_session_dirty_exec)) {
      session.multi_queue.push_back({cmd, std::vector<std::string>(argv.begin(), argv.end())});
      session.multi_cmd_flags |= spec.flags;
    }
    session.out.append("+QUEUED\r\n");
    return;
  }
  call(session, *cmd, argv);
}

void Engine::call(Session& session, Command& command, std::span<const std::string_view> argv,
                  bool reprocessing) {
  Command* cmd = &command;
  const CommandSpec& spec = cmd->spec;
  CmdContext ctx(*this, session, *cmd, argv);
  // What propagation compares after the command (Valkey's call(): dirty before and after).
  bool propagating = !m_sinks.empty();
  size_t reply_mark = session.out.size();
  size_t unit_mark = m_unit.size();
  int db_at_start = session.db;
  uint64_t changes_before = m_snapshots->total_changes();
  m_force_propagation = false;
  int64_t start = m_clock.monotonic_us();
  ++m_call_depth;
  spec.handler(ctx);
  --m_call_depth;
  int64_t elapsed = m_clock.monotonic_us() - start;
  bool blocked = session.has(k_session_blocked);
  // Client-side caching remembers what the requesting client read, also through a
  // script's calls (read-only scripts themselves have no keys of their own to track).
  if (Session* tracker = m_tracking->current();
      tracker != nullptr && (spec.flags & k_cmd_readonly) != 0 &&
      tracker->has(k_session_tracking) && !tracker->has(k_session_tracking_bcast) &&
      cmd->full_name != "eval_ro" && cmd->full_name != "evalsha_ro" &&
      cmd->full_name != "fcall_ro") {
    m_tracking->remember_keys(*tracker, *cmd, argv);
  }
  // A command whose nested calls (EXEC's queue) propagated themselves adds nothing more.
  if (propagating && !blocked && (spec.flags & (k_cmd_write | k_cmd_may_replicate)) != 0 &&
      (m_snapshots->total_changes() != changes_before || m_force_propagation) &&
      m_unit.size() == unit_mark) {
    command_effects(*this, db_at_start, argv, std::string_view(session.out).substr(reply_mark),
                    m_unit);
  }
  m_force_propagation = false;
  if (m_call_depth == 0) {
    flush_unit(session);
  }
  // As Valkey's call(): only executed commands count, and the slow log and monitors see
  // them after they ran (so MONITOR shows the database SELECT switched to). A command that
  // blocked is shown to monitors now but counted when it replies; one that runs again after
  // blocking is not shown twice.
  if (!blocked) {
    ++m_stats.total_commands_processed;
  }
  if (!blocked && (spec.flags & k_cmd_skip_slowlog) == 0 && m_slowlog_slower_than_us >= 0 &&
      m_slowlog_max_len != 0 && elapsed >= m_slowlog_slower_than_us) {
    slowlog_push(session, argv, elapsed);
    if (m_slowlog.size() > m_slowlog_max_len) {
      m_slowlog.pop_back();
    }
  }
  if (!reprocessing && !m_monitors.empty() &&
      (spec.flags & (k_cmd_skip_monitor | k_cmd_admin)) == 0) {
    feed_monitors(session, argv);
  }
  if (!blocked) {
    ++cmd->stats.calls;
    // A script's calls count for the client that ran the script (Valkey's current_client).
    Session* current = m_tracking->current();
    ++(current != nullptr ? *current : session).total_commands;
  }
  cmd->stats.usec += static_cast<uint64_t>(elapsed);
  session.last_command = cmd->full_name;
  if (ctx.reply().error_count() != 0) {
    ++cmd->stats.failed_calls;
    m_stats.total_error_replies += ctx.reply().error_count();
    ++m_stats.error_counts[std::string(ctx.reply().last_error_code())];
  }
  m_memory.note_peak();
}

RespValue Engine::run(Session& session, std::span<const std::string_view> argv) {
  size_t start = session.out.size();
  execute(session, argv);
  RespValue v;
  size_t consumed = 0;
  std::string_view data(session.out);
  data.remove_prefix(start);
  if (parse_resp(data, v, consumed) != RespParse::ok) {
    v = RespValue{};
  }
  session.out.resize(start);
  return v;
}

RespValue Engine::run(std::initializer_list<std::string_view> argv) {
  if (m_internal == nullptr) {
    m_internal = &open_session(nullptr);
  }
  std::vector<std::string_view> v(argv);
  return run(*m_internal, v);
}

void Engine::feed_monitors(const Session& from, std::span<const std::string_view> argv) {
  int64_t us = m_clock.now_us();
  char head[96];
  std::string src = from.has(k_session_unix_socket)  ? "unix:" + m_config.unixsocket
                    : from.has(k_session_in_process) ? std::string("lua")
                                                     : from.addr;
  int n =
      std::snprintf(head, sizeof(head), "+%lld.%06lld [%d ", static_cast<long long>(us / 1000000),
                    static_cast<long long>(us % 1000000), from.db);
  std::string line(head, static_cast<size_t>(n));
  line += src;
  line += ']';
  for (std::string_view a : argv) {
    line += " \"";
    for (unsigned char c : a) {
      switch (c) {
        case '\\':
          line += "\\\\";
          break;
        case '"':
          line += "\\\"";
          break;
        case '\n':
          line += "\\n";
          break;
        case '\r':
          line += "\\r";
          break;
        case '\t':
          line += "\\t";
          break;
        case '\a':
          line += "\\a";
          break;
        case '\b':
          line += "\\b";
          break;
        default:
          if (c < 0x20 || c >= 0x7f) {
            char esc[8];
            std::snprintf(esc, sizeof(esc), "\\x%02x", c);
            line += esc;
          } else {
            line += static_cast<char>(c);
          }
      }
    }
    line += '"';
  }
  line += "\r\n";
  for (Session* m : m_monitors) {
    // As Valkey, a client being closed (over its output limit) gets nothing more.
    if (m->has(k_session_close_asap)) {
      continue;
    }
    m->out += line;
    if (m->host() != nullptr) {
      m->host()->wake(*m);
    }
  }
}

ClientClass Engine::client_class(const Session& session) const {
  if (session.has(k_session_replica)) {
    return ClientClass::replica;
  }
  return session.has(k_session_pubsub) ? ClientClass::pubsub : ClientClass::normal;
}

bool Engine::output_buffer_limit_reached(Session& session) {
  const OutputBufferLimit& limit =
      m_config.client_output_buffer_limits[static_cast<size_t>(client_class(session))];
  uint64_t used = session.reply_list_bytes();
  // A replica's snapshot payload is not held against its limit, only the stream after it
  // (Valkey sends the RDB apart from the output buffer).
  if (session.payload_end_output > session.net_output_bytes) {
    uint64_t payload_left = session.payload_end_output - session.net_output_bytes;
    used = used > payload_left ? used - payload_left : 0;
  }
  bool hard = limit.hard_bytes != 0 && used >= limit.hard_bytes;
  bool soft = limit.soft_bytes != 0 && used >= limit.soft_bytes;
  if (!soft) {
    session.obuf_soft_limit_since_s = 0;
    return hard;
  }
  int64_t now_s = m_clock.now_ms() / 1000;
  if (session.obuf_soft_limit_since_s == 0) {
    // The first time counts from now: a burst shorter than the soft seconds is forgiven.
    session.obuf_soft_limit_since_s = now_s;
    return hard;
  }
  return hard || now_s - session.obuf_soft_limit_since_s > limit.soft_seconds;
}

std::optional<std::string> Engine::enforce_output_buffer_limit(Session& session) {
  // In-process sessions have nobody to drop them; a client already closing is left alone.
  if (session.host() == nullptr || session.reply_list_bytes() == 0 ||
      session.has(k_session_close_asap) || !output_buffer_limit_reached(session)) {
    return std::nullopt;
  }
  session.set(k_session_close_asap);
  ++m_stats.client_output_buffer_limit_disconnections;
  bool hide = directive_value(*find_directive("hide-user-data-from-log"), m_config) == "yes";
  int64_t now_s = m_clock.now_ms() / 1000;
  std::string flags;
  if (session.has(k_session_monitor)) {
    flags += 'O';
  }
  if (session.has(k_session_pubsub)) {
    flags += 'P';
  }
  return fmt::format(
      "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} "
      "ssub={} multi={} watch={} qbuf={} omem={} cmd={} user={}",
      session.id(), session.addr, session.laddr, session.fd, hide ? "*redacted*" : session.name,
      now_s - session.created_ms / 1000, now_s - session.last_interaction_ms / 1000,
      flags.empty() ? "N" : flags, session.db, session.sub_count(), session.psub_count(),
      session.ssub_count(), session.multi_count(), session.watch_count(),
      session.query_buffer_bytes, session.reply_list_bytes(), session.last_command,
      hide ? "*redacted*" : "default");
}

void Engine::request_shutdown(Session& from) {
  m_shutdown = true;
  if (from.host() != nullptr) {
    from.host()->request_shutdown();
  }
}

std::optional<std::string> Engine::prepare_for_shutdown(bool save, bool nosave) {
  if (m_notifier != nullptr) {
    m_notifier->notify("STOPPING=1\n");
  }
  bool saving = !nosave && (save || !parse_save_rules(m_config.save).empty());
  if (saving && m_notifier != nullptr) {
    m_notifier->notify("STATUS=Saving the final RDB snapshot\n");
  }
  auto failed = m_snapshots->save_for_shutdown(*this, save, nosave);
  if (failed && m_notifier != nullptr) {
    m_notifier->notify("STATUS=Error trying to save the DB, can't exit.\n");
  }
  return failed;
}

void Engine::cron() {
  m_snapshots->cron(*this);
  m_aof->cron();
  m_primary->cron();
  int64_t now_us = m_clock.monotonic_us();
  if (now_us >= m_next_metric_us) {
    m_ops_metric.track(m_stats.total_commands_processed, now_us);
    m_input_metric.track(m_stats.total_net_input_bytes, now_us);
    m_output_metric.track(m_stats.total_net_output_bytes, now_us);
    m_next_metric_us = now_us + 100000;
  }
  int hz = m_config.hz > 0 ? m_config.hz : 10;
  // Active expiry may use 25% of a cron period, as Valkey's slow cycle does.
  int64_t budget_us = 1000000 / hz / 4;
  int64_t deadline = now_us + budget_us;
  m_keyspace.command_time_ms = m_clock.now_ms();
  // A pause freezes the dataset: no key expires or is evicted by the server meanwhile. A
  // replica leaves expiry to its primary, whose DELs arrive in the stream (Valkey runs the
  // active cycle on primaries only).
  if (m_config.active_expire && !m_pauses->dataset_frozen() && !m_replication->is_replica()) {
    for (size_t i = 0; i < m_dbs.size(); ++i) {
      Db& d = *m_dbs[(m_expire_db_cursor + i) % m_dbs.size()];
      d.active_expire(deadline);
      active_expire_hash_fields(*this, d, deadline);
      if (m_clock.monotonic_us() > deadline) {
        ++m_stats.expired_time_cap_reached_count;
        m_expire_db_cursor = (m_expire_db_cursor + i + 1) % m_dbs.size();
        break;
      }
    }
  }
  for (auto& d : m_dbs) {
    d->rehash_step(100);
  }
  m_keyspace.command_time_ms = 0;
  handle_blocked_timeouts();
  if (m_config.maxmemory != 0) {
    perform_evictions();
  }
  if (m_tracking->clients() != 0) {
    m_tracking->limit_table(m_tracking_max_keys);
  }
}

bool Engine::perform_evictions() {
  uint64_t limit = m_config.maxmemory;
  // A replica neither evicts nor refuses writes for memory (Valkey's
  // replica-ignore-maxmemory, yes by default): its primary's DELs keep it in line.
  if (limit == 0 || used_memory() <= limit || m_replication->is_replica()) {
    return true;
  }
  // Evicting frees dataset bytes only: the rest is taken once rather than counted over
  // every client per victim. With the keyspace empty and still over, the caller's
  // write gets OOM, as in Valkey.
  uint64_t floor = startup_memory(*this) + clients_state_memory(*this);
  auto over_limit = [&] { return floor + m_memory.used() > limit; };
  if (m_pauses->dataset_frozen()) {
    return true;  // as Valkey, no eviction and no OOM while paused
  }
  EvictionPolicy policy = m_config.maxmemory_policy;
  if (policy == EvictionPolicy::noeviction) {
    return false;
  }
  int64_t now = m_keyspace.now_ms();
  int samples = std::max(1, m_config.maxmemory_samples);
  // A small pool of the best candidates seen so far, as Valkey's eviction pool keeps
  // across calls, improves the approximation of true LRU/LFU with few samples.
  struct Candidate {
    uint64_t score;  // higher = better to evict
    int db;
    std::string key;
  };
  std::vector<Candidate> pool;
  int64_t start_us = m_clock.monotonic_us();
  while (over_limit()) {
    Db* victim_db = nullptr;
    std::string victim_key;
    if (policy == EvictionPolicy::allkeys_random || policy == EvictionPolicy::volatile_random) {
      // One random starting database, then each in turn, so a non-empty one is found.
      size_t first = static_cast<size_t>(m_rng());
      for (size_t i = 0; i < m_dbs.size() && victim_db == nullptr; ++i) {
        Db& d = *m_dbs[(first + i) % m_dbs.size()];
        Entry* e =
            policy == EvictionPolicy::allkeys_random ? d.random_entry() : d.random_volatile_entry();
        if (e != nullptr) {
          victim_db = &d;
          victim_key = std::string(e->key());
        }
      }
    } else {
      pool.clear();
      for (auto& dptr : m_dbs) {
        Db& d = *dptr;
        size_t n = is_volatile(policy) ? d.expires_size() : d.size();
        if (n == 0) {
          continue;
        }
        for (int s = 0; s < samples; ++s) {
          Entry* e = is_volatile(policy) ? d.random_volatile_entry() : d.random_entry();
          if (e == nullptr) {
            break;
          }
          uint64_t score = 0;
          switch (policy) {
            case EvictionPolicy::allkeys_lru:
            case EvictionPolicy::volatile_lru:
              score = static_cast<uint64_t>(lru_idle_ms(e->lru(), now));
              break;
            case EvictionPolicy::allkeys_lfu:
            case EvictionPolicy::volatile_lfu:
              score = 255 - lfu_counter(e->lru(), now, m_config.lfu_decay_time);
              break;
            case EvictionPolicy::volatile_ttl:
              score = UINT64_MAX - static_cast<uint64_t>(e->expire_ms());
              break;
            default:
              break;
          }
          pool.push_back({score, d.id(), std::string(e->key())});
        }
      }
      if (pool.empty()) {
        return false;
      }
      auto best = std::max_element(
          pool.begin(), pool.end(),
          [](const Candidate& a, const Candidate& b) { return a.score < b.score; });
      victim_db = m_dbs[static_cast<size_t>(best->db)].get();
      victim_key = best->key;
    }
    if (victim_db == nullptr) {
      return false;
    }
    if (victim_db->remove(victim_key)) {
      ++m_stats.evicted_keys;
      m_change_by_server = true;
      signal_modified_key(victim_db->id(), victim_key);
      m_change_by_server = false;
      notify_keyspace_event(k_notify_evicted, "evicted", victim_key, victim_db->id());
      if (!m_sinks.empty()) {
        bool lazy = directive_value(*find_directive("lazyfree-lazy-eviction"), m_config) == "yes";
        propagate_now(victim_db->id(), {lazy ? "UNLINK" : "DEL", victim_key});
      }
    }
    // Never spend more than a short slice per call; the next command continues. As
    // Valkey's EVICT_RUNNING, the command still runs: only nothing left to evict is OOM.
    if (m_clock.monotonic_us() - start_us > 500 && over_limit()) {
      m_stats.total_eviction_exceeded_time_us +=
          static_cast<uint64_t>(m_clock.monotonic_us() - start_us);
      return true;
    }
  }
  return true;
}

}  // namespace keyshift::engine

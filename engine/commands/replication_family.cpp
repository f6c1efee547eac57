// Replication commands: REPLICAOF/SLAVEOF (the role; the server's ReplicaLink runs the link
// it asks for), FAILOVER, SYNC/PSYNC/REPLCONF (a replica of this server; repl/primary runs
// the sync and the stream), and the acknowledgement commands WAIT and WAITAOF, which count
// the replicas' REPLCONF ACKs (ReplicationAcks below) and block until enough arrive, as
// Valkey 8.0.1's waitCommand and waitaofCommand do; the local AOF counts for real.
#include "engine/blocking.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/repl/primary.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/session.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <climits>

#include <cstdint>
#include <string>
#include <string_view>

namespace keyshift::engine {
namespace {

/// Valkey's NET_HOST_STR_LEN: REPLCONF ip-address must be shorter.
constexpr size_t k_net_host_str_len = 256;

/// What a primary knows about the acknowledgement of a client's writes: the replicas' ACKs
/// against the client's repl_woff. With AOF off Valkey's fsynced_reploff is -1, below any
/// write offset, so the local fsync never counts.
struct ReplicationAcks {
  /// Replicas that acknowledged every write of the client (replicationCountAcksByOffset).
  static int64_t replicas(const Engine& engine, const Session& s) {
    return engine.primary().acked(s.repl_woff, false);
  }
  /// Replicas that fsynced every write of the client to their AOF.
  static int64_t aof_replicas(const Engine& engine, const Session& s) {
    return engine.primary().acked(s.repl_woff, true);
  }
  /// 1 when this server fsynced every write of the client to its AOF.
  static int64_t local_aof(const Engine& engine, const Session& s) {
    return engine.aof().on() && engine.aof().fsynced_offset() >= s.woff ? 1 : 0;
  }
  /// Whether this server writes an AOF (appendonly yes, acted upon).
  static bool aof_enabled(const Engine& engine) { return engine.aof().on(); }
  /// Whether this server is a replica (WAIT/WAITAOF refuse to run there).
  static bool is_replica(const Engine& engine) { return engine.replication().is_replica(); }
};

/// Valkey's getTimeoutFromObjectOrReply with UNIT_MILLISECONDS: an integer, 0 for ever.
bool parse_ms_timeout(CmdContext& ctx, std::string_view arg, int64_t& deadline_ms) {
  int64_t ms = 0;
  if (!parse_i64(arg, ms)) {
    ctx.reply().error(errors::k_timeout_not_integer);
    return false;
  }
  if (ms < 0) {
    ctx.reply().error(errors::k_timeout_negative);
    return false;
  }
  if (ms > 0) {
    int64_t now = ctx.now_ms();
    if (ms > INT64_MAX - now) {
      ctx.reply().error(errors::k_timeout_out_of_range);
      return false;
    }
    ms += now;
  }
  deadline_ms = ms;
  return true;
}

/// Valkey's getRangeLongFromObjectOrReply without a message.
bool parse_range(CmdContext& ctx, std::string_view arg, int64_t min, int64_t max, int64_t& out) {
  if (!parse_i64(arg, out)) {
    ctx.reply().error(errors::k_not_integer);
    return false;
  }
  if (out < min || out > max) {
    ctx.reply().error("ERR value is out of range, value must between " + std::to_string(min) +
                      " and " + std::to_string(max));
    return false;
  }
  return true;
}

void reply_wait(Engine& engine, Session& s) {
  ReplyBuilder(s.out, s.resp).integer(ReplicationAcks::replicas(engine, s));
}

void reply_waitaof(Engine& engine, Session& s) {
  ReplyBuilder r(s.out, s.resp);
  r.array(2);
  r.integer(ReplicationAcks::local_aof(engine, s));
  r.integer(ReplicationAcks::aof_replicas(engine, s));
}

void cmd_wait(CmdContext& ctx) {
  if (ReplicationAcks::is_replica(ctx.engine())) {
    ctx.reply().error(errors::k_wait_on_replica);
    return;
  }
  int64_t numreplicas = 0;
  if (!parse_i64(ctx.arg(1), numreplicas)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  int64_t deadline_ms = 0;
  if (!parse_ms_timeout(ctx, ctx.arg(2), deadline_ms)) {
    return;
  }
  // Enough acks already, or a client that may not block (inside MULTI/EXEC or a script):
  // the count now.
  if (ReplicationAcks::replicas(ctx.engine(), ctx.session()) >= numreplicas || !may_block(ctx)) {
    reply_wait(ctx.engine(), ctx.session());
    return;
  }
  block_until_timeout(ctx, deadline_ms, reply_wait);
  ctx.engine().primary().add_waiter(ctx.session().id(), numreplicas, ctx.session().repl_woff,
                                    false);
  ctx.engine().primary().request_acks();
}

void cmd_waitaof(CmdContext& ctx) {
  int64_t numlocal = 0;
  int64_t numreplicas = 0;
  int64_t deadline_ms = 0;
  if (!parse_range(ctx, ctx.arg(1), 0, 1, numlocal)) {
    return;
  }
  if (!parse_i64(ctx.arg(2), numreplicas)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  if (numreplicas < 0) {
    ctx.reply().error(errors::k_must_be_positive);
    return;
  }
  if (!parse_ms_timeout(ctx, ctx.arg(3), deadline_ms)) {
    return;
  }
  const Engine& engine = ctx.engine();
  if (ReplicationAcks::is_replica(engine)) {
    ctx.reply().error(errors::k_waitaof_on_replica);
    return;
  }
  if (numlocal != 0 && !ReplicationAcks::aof_enabled(engine)) {
    ctx.reply().error(errors::k_waitaof_appendonly_disabled);
    return;
  }
  const Session& s = ctx.session();
  if (numlocal != 0 && ReplicationAcks::local_aof(engine, s) < numlocal) {
    // Valkey blocks the client until its background fsync covers the client's writes;
    // keyshift fsyncs now, so the reply below already counts the local copy.
    ctx.engine().aof().fsync_now();
  }
  if ((ReplicationAcks::aof_replicas(engine, s) >= numreplicas &&
       ReplicationAcks::local_aof(engine, s) >= numlocal) ||
      !may_block(ctx)) {
    reply_waitaof(ctx.engine(), ctx.session());
    return;
  }
  block_until_timeout(ctx, deadline_ms, reply_waitaof);
  ctx.engine().primary().add_waiter(ctx.session().id(), numreplicas, ctx.session().repl_woff, true);
  ctx.engine().primary().request_acks();
}

/// SYNC and PSYNC replid offset, as Valkey's syncCommand: the session becomes a replica; a
/// full sync's payload follows once the snapshot child is done.
void cmd_sync(CmdContext& ctx) {
  Session& s = ctx.session();
  if (s.has(k_session_replica)) {
    return;
  }
  const ReplicationState& repl = ctx.engine().replication();
  if (repl.is_replica() && repl.state() != ReplLinkState::connected) {
    ctx.reply().error(errors::k_sync_not_connected);
    return;
  }
  if (!s.out.empty()) {
    ctx.reply().error(errors::k_sync_pending_output);
    return;
  }
  bool psync = iequals(ctx.arg(0), "psync");
  int64_t offset = -1;
  if (psync && !parse_i64(ctx.arg(2), offset)) {
    ctx.reply().error(errors::k_not_integer);
    return;
  }
  ctx.engine().primary().sync(s, psync, psync ? ctx.arg(1) : std::string_view("?"), offset);
}

/// REPLCONF option value ..., as Valkey's replconfCommand: the replica's address and
/// capabilities before SYNC, its ACKs after (which get no reply).
void cmd_replconf(CmdContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  Session& s = ctx.session();
  ReplicationPrimary& primary = ctx.engine().primary();
  for (size_t j = 1; j < ctx.argc(); j += 2) {
    std::string_view opt = ctx.arg(j);
    std::string_view value = ctx.arg(j + 1);
    if (iequals(opt, "listening-port")) {
      int64_t port = 0;
      if (!parse_int_arg(ctx, value, port)) {
        return;
      }
      primary.peer(s).listening_port = static_cast<int>(port);
    } else if (iequals(opt, "ip-address")) {
      if (value.size() >= k_net_host_str_len) {
        ctx.reply().error("ERR REPLCONF ip-address provided by replica instance is too long: " +
                          std::to_string(value.size()) + " bytes");
        return;
      }
      primary.peer(s).ip = std::string(value);
    } else if (iequals(opt, "capa")) {
      if (iequals(value, "eof")) {
        primary.peer(s).capa_eof = true;
      } else if (iequals(value, "psync2")) {
        primary.peer(s).capa_psync2 = true;
      }
    } else if (iequals(opt, "ack")) {
      // No reply, ever: the replica reads only the stream.
      uint64_t offset = 0;
      if (!s.has(k_session_replica) || !parse_u64(value, offset)) {
        return;
      }
      std::optional<uint64_t> aof;
      uint64_t fack = 0;
      if (ctx.argc() > j + 3 && iequals(ctx.arg(j + 2), "fack") &&
          parse_u64(ctx.arg(j + 3), fack)) {
        aof = fack;
      }
      primary.on_ack(s, offset, aof);
      return;
    } else if (iequals(opt, "getack")) {
      // Our own primary's request: ReplicaLink answers it from the stream's offset.
      return;
    } else if (iequals(opt, "rdb-only") || iequals(opt, "rdb-filter-only") ||
               iequals(opt, "version") || iequals(opt, "rdb-channel")) {
      // Accepted as Valkey accepts them; keyshift always sends the whole dataset and stream.
    } else {
      ctx.reply().error("ERR Unrecognized REPLCONF option: " + std::string(opt));
      return;
    }
  }
  ctx.reply().ok();
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms], parsed and checked in the order of
/// Valkey's failoverCommand; without replicas it can never start.
void cmd_failover(CmdContext& ctx) {
  size_t argc = ctx.argc();
  if (argc == 2 && iequals(ctx.arg(1), "abort")) {
    ctx.reply().error("ERR No failover in progress.");
    return;
  }
  int64_t timeout_ms = 0;
  bool have_host = false;
  bool force = false;
  for (size_t j = 1; j < argc; ++j) {
    std::string_view a = ctx.arg(j);
    if (iequals(a, "timeout") && j + 1 < argc && timeout_ms == 0) {
      if (!parse_int_arg(ctx, ctx.arg(j + 1), timeout_ms)) {
        return;
      }
      if (timeout_ms <= 0) {
        ctx.reply().error("ERR FAILOVER timeout must be greater than 0");
        return;
      }
      ++j;
    } else if (iequals(a, "to") && j + 2 < argc && !have_host) {
      int64_t port = 0;
      if (!parse_int_arg(ctx, ctx.arg(j + 2), port)) {
        return;
      }
      have_host = true;
      j += 2;
    } else if (iequals(a, "force") && !force) {
      force = true;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if (ReplicationAcks::is_replica(ctx.engine())) {
    ctx.reply().error("ERR FAILOVER is not valid when server is a replica.");
    return;
  }
  ctx.reply().error("ERR FAILOVER requires connected replicas.");
}

/// REPLICAOF host port | NO ONE, as Valkey's replicaofCommand: following a new primary keeps
/// the data until the link's full sync replaces it (or PSYNC continues from it); NO ONE
/// keeps the data under a new replication ID, the old one becoming replid2.
void cmd_replicaof(CmdContext& ctx) {
  if (ctx.session().has(k_session_primary)) {
    ctx.reply().error("ERR Command is not valid when client is a replica.");
    return;
  }
  ReplicationState& repl = ctx.engine().replication();
  if (iequals(ctx.arg(1), "no") && iequals(ctx.arg(2), "one")) {
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string id(40, '0');
    for (char& c : id) {
      c = k_hex[ctx.engine().rng()() & 15];
    }
    repl.promote(std::move(id));
    // CONFIG GET and REWRITE show the primary followed now, as Valkey's do.
    ctx.engine().config().unimplemented_settings.erase("replicaof");
    ctx.reply().ok();
    return;
  }
  int64_t port = 0;
  if (!parse_i64(ctx.arg(2), port) || port < 0 || port > 65535) {
    ctx.reply().error("ERR Invalid master port");
    return;
  }
  if (!repl.follow(std::string(ctx.arg(1)), static_cast<int>(port))) {
    ctx.reply().simple("OK Already connected to specified master");
    return;
  }
  ctx.engine().config().unimplemented_settings["replicaof"] =
      std::string(ctx.arg(1)) + " " + std::to_string(port);
  ctx.reply().ok();
}

constexpr CommandSpec k_replication_commands[] = {
    {"replicaof", 3, k_cmd_admin | k_cmd_noscript | k_cmd_stale, 0, 0, 0, cmd_replicaof,
     "@admin @slow @dangerous"},
    {"slaveof", 3, k_cmd_admin | k_cmd_noscript | k_cmd_stale, 0, 0, 0, cmd_replicaof,
     "@admin @slow @dangerous"},
    {"failover", -1, k_cmd_admin | k_cmd_noscript | k_cmd_stale, 0, 0, 0, cmd_failover,
     "@admin @slow @dangerous"},
    {"sync", 1, k_cmd_admin | k_cmd_noscript | k_cmd_no_multi, 0, 0, 0, cmd_sync,
     "@admin @slow @dangerous"},
    {"psync", -3, k_cmd_admin | k_cmd_noscript | k_cmd_no_multi, 0, 0, 0, cmd_sync,
     "@admin @slow @dangerous"},
    {"replconf", -1, k_cmd_admin | k_cmd_noscript | k_cmd_loading | k_cmd_stale | k_cmd_allow_busy,
     0, 0, 0, cmd_replconf, "@admin @slow @dangerous"},
    {"wait", 3, k_cmd_blocking, 0, 0, 0, cmd_wait, "@slow @blocking @connection"},
    {"waitaof", 4, k_cmd_blocking, 0, 0, 0, cmd_waitaof, "@slow @blocking @connection"},
};

}  // namespace

void register_replication_family(CommandRegistry& registry) {
  registry.add(k_replication_commands);
}

}  // namespace keyshift::engine

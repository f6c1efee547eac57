// Server commands: INFO, CONFIG, FLUSHDB/FLUSHALL, DBSIZE, TIME, SHUTDOWN, ROLE, LOLWUT,
// LATENCY and SLOWLOG. COMMAND, CLIENT/MONITOR and DEBUG/MEMORY have files of their own.
#include "engine/acl/acl.hpp"
#include "engine/commands/context.hpp"
#include "engine/commands/families.hpp"
#include "engine/commands/info.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/snapshots.hpp"
#include "engine/repl/primary.hpp"
#include "engine/repl/replication_state.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/server/config_rewrite.hpp"
#include "engine/server/config_table.hpp"
#include "engine/tracking.hpp"
#include "engine/util/net_address.hpp"
#include "engine/util/strconv.hpp"
#include "engine/util/strings.hpp"

#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace keyshift::engine {
namespace {

// --- INFO -------------------------------------------------------------------------------

void cmd_info(CmdContext& ctx) {
  std::string text = generate_info(ctx.engine(), ctx.args().subspan(1));
  ctx.reply().verbatim(text);
}

// --- CONFIG -----------------------------------------------------------------------------

void cmd_config_get(CmdContext& ctx) {
  std::vector<std::string> patterns(ctx.args().begin() + 2, ctx.args().end());
  auto found = config_get(ctx.engine().config(), patterns);
  ctx.reply().map(found.size());
  for (const auto& [name, value] : found) {
    ctx.reply().bulk(name);
    ctx.reply().bulk(value);
  }
}

/// Side effects a changed setting needs beyond the EngineConfig field; an error text when
/// one could not be applied.
std::optional<std::string> apply_config_changes(Engine& engine,
                                                std::span<const std::string_view> changed) {
  for (std::string_view name : changed) {
    if (name == "appendonly") {
      // As Valkey's updateAppendonly: turning it on starts a rewrite whose base holds the
      // dataset; turning it off flushes and closes the file.
      if (engine.config().appendonly && !engine.aof().on()) {
        if (auto err = engine.aof().start()) {
          engine.config().appendonly = false;
          return std::string(errors::k_aof_config_set_failed);
        }
      } else if (!engine.config().appendonly && engine.aof().on()) {
        engine.aof().stop();
      }
    }
    if (name == "maxmemory" && engine.config().maxmemory != 0 &&
        engine.used_memory() > engine.config().maxmemory) {
      // As Valkey: lowering maxmemory below the usage starts evicting right away.
      engine.perform_evictions();
    }
  }
  engine.refresh_settings();
  return std::nullopt;
}

void cmd_config_set(CmdContext& ctx) {
  std::vector<std::string> pairs(ctx.args().begin() + 2, ctx.args().end());
  EngineConfig before = ctx.engine().config();
  auto changed =
      config_set(ctx.engine().config(), pairs,
                 is_local(ctx.session()) ? ClientLocality::local : ClientLocality::remote);
  if (!changed) {
    ctx.reply().error(changed.error());
    return;
  }
  if (auto err = apply_config_changes(ctx.engine(), *changed)) {
    ctx.reply().error(*err);
    return;
  }
  // Settings the network host owns (port, tls-port, the TLS context): on failure every
  // value goes back and is applied again, as Valkey restores its backup. The port goes
  // first and alone, so that a failure names the setting it came from.
  if (SessionHost* host = ctx.session().host()) {
    std::vector<std::string_view> port;
    std::vector<std::string_view> rest;
    for (std::string_view n : *changed) {
      (n == "port" ? port : rest).push_back(n);
    }
    std::string name = "port";
    std::optional<std::string> err = host->apply_config(port);
    if (!err) {
      err = host->apply_config(rest);
      name = rest.empty() ? std::string() : std::string(rest.front());
      for (std::string_view n : rest) {
        if (n.starts_with("tls-")) {
          name = std::string(n);
          break;
        }
      }
    }
    if (err) {
      ctx.engine().config() = before;
      ctx.engine().refresh_settings();
      (void)host->apply_config(*changed);  // the old values, as they were before
      ctx.reply().error(fmt::format(
          "ERR CONFIG SET failed (possibly related to argument '{}') - {}", name, *err));
      return;
    }
  }
  ctx.reply().ok();
}

void cmd_config_resetstat(CmdContext& ctx) {
  ctx.engine().reset_stats();
  ctx.reply().ok();
}

void cmd_config_rewrite(CmdContext& ctx) {
  const std::string& path = ctx.engine().identity().config_file;
  if (path.empty()) {
    ctx.reply().error(errors::k_no_config_file);
    return;
  }
  // The live users become the file's `user` lines, unless they live in an aclfile (then the
  // file keeps none), as Valkey's rewriteConfigUserOption.
  std::vector<std::string> users;
  if (ctx.engine().config().aclfile.empty()) {
    for (const auto& [name, user] : ctx.engine().users().all()) {
      users.push_back("user " + name + " " + ctx.engine().users().describe(*user));
    }
  }
  if (auto failed = rewrite_config_file(path, ctx.engine().config(), &users)) {
    ctx.reply().error(std::string(errors::k_rewriting_config_prefix) + std::strerror(*failed));
    return;
  }
  ctx.reply().ok();
}

void cmd_config_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "GET <pattern>",
                      "    Return parameters matching the glob-like <pattern> and their values.",
                      "SET <directive> <value>",
                      "    Set the configuration <directive> to <value>.",
                      "RESETSTAT",
                      "    Reset statistics reported by the INFO command.",
                      "REWRITE",
                      "    Rewrite the configuration file.",
                  });
}

// --- Keyspace-wide and server commands --------------------------------------------------

/// FLUSHDB/FLUSHALL take an optional ASYNC or SYNC; keyshift always frees synchronously.
bool check_flush_args(CmdContext& ctx) {
  if (ctx.argc() == 1 ||
      (ctx.argc() == 2 && (iequals(ctx.arg(1), "sync") || iequals(ctx.arg(1), "async")))) {
    return true;
  }
  ctx.reply().error(errors::k_syntax);
  return false;
}

void cmd_flushdb(CmdContext& ctx) {
  if (!check_flush_args(ctx)) {
    return;
  }
  ctx.engine().signal_flushed_db(ctx.session().db);
  ctx.db().flush();
  ctx.engine().tracking().invalidate_all();
  ctx.reply().ok();
}

void cmd_flushall(CmdContext& ctx) {
  if (!check_flush_args(ctx)) {
    return;
  }
  for (int i = 0; i < ctx.engine().db_count(); ++i) {
    ctx.engine().signal_flushed_db(i);
    ctx.engine().db(i).flush();
  }
  ctx.engine().tracking().invalidate_all();
  ctx.reply().ok();
}

void cmd_dbsize(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.db().size()));
}

void cmd_time(CmdContext& ctx) {
  int64_t us = ctx.engine().clock().now_us();
  ctx.reply().array(2);
  ctx.reply().bulk(std::to_string(us / 1000000));
  ctx.reply().bulk(std::to_string(us % 1000000));
}

void cmd_shutdown(CmdContext& ctx) {
  bool nosave = false;
  bool save = false;
  bool now = false;
  bool force = false;
  bool abort = false;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string_view a = ctx.arg(i);
    if (iequals(a, "nosave")) {
      nosave = true;
    } else if (iequals(a, "save")) {
      save = true;
    } else if (iequals(a, "now")) {
      now = true;
    } else if (iequals(a, "force")) {
      force = true;
    } else if (iequals(a, "abort")) {
      abort = true;
    } else {
      ctx.reply().error(errors::k_syntax);
      return;
    }
  }
  if ((abort && (nosave || save || now || force)) || (nosave && save)) {
    ctx.reply().error(errors::k_syntax);
    return;
  }
  if (abort) {
    ctx.reply().error(errors::k_no_shutdown_in_progress);
    return;
  }
  // During a busy script only SHUTDOWN NOSAVE goes through (the script is then killed).
  if (ctx.engine().scripting().busy() && !nosave) {
    ctx.reply().error(ctx.engine().scripting().busy_error());
    return;
  }
  (void)now;  // no replicas to wait for: NOW changes nothing
  if (auto failed = ctx.engine().prepare_for_shutdown(save, nosave)) {
    if (!force) {
      ctx.reply().error(errors::k_shutdown_errors);
      return;
    }
  }
  // As Valkey's process exit, a successful SHUTDOWN sends no reply.
  ctx.engine().request_shutdown(ctx.session());
}

void cmd_role(CmdContext& ctx) {
  const ReplicationState& repl = ctx.engine().replication();
  if (!repl.is_replica()) {
    // Online replicas only, as Valkey's roleCommand lists them: port and offset as bulks.
    std::vector<const ReplicaPeer*> online;
    for (const ReplicaPeer* p : ctx.engine().primary().replicas()) {
      if (p->state == ReplicaState::online) {
        online.push_back(p);
      }
    }
    ctx.reply().array(3);
    ctx.reply().bulk("master");
    ctx.reply().integer(static_cast<int64_t>(repl.offset()));
    ctx.reply().array(online.size());
    for (const ReplicaPeer* p : online) {
      auto it = ctx.engine().sessions().find(p->session_id);
      std::string ip = !p->ip.empty() || it == ctx.engine().sessions().end()
                           ? p->ip
                           : std::string(addr_ip(it->second->addr));
      ctx.reply().array(3);
      ctx.reply().bulk(ip);
      ctx.reply().bulk(std::to_string(p->listening_port));
      ctx.reply().bulk(std::to_string(p->ack_offset));
    }
    return;
  }
  ctx.reply().array(5);
  ctx.reply().bulk("slave");
  ctx.reply().bulk(repl.primary_host());
  ctx.reply().integer(repl.primary_port());
  ctx.reply().bulk(repl_link_state_name(repl.state()));
  // The offset of the link's client: -1 while there is none (Valkey's server.primary).
  bool linked = repl.state() == ReplLinkState::sync || repl.state() == ReplLinkState::connected;
  ctx.reply().integer(linked ? static_cast<int64_t>(repl.offset()) : -1);
}

void cmd_lolwut(CmdContext& ctx) {
  if (ctx.argc() >= 3 && iequals(ctx.arg(1), "version")) {
    int64_t v = 0;
    if (!parse_int_arg(ctx, ctx.arg(2), v)) {
      return;
    }
  }
  // Valkey 8's own LOLWUT prints the version; the art of VERSION 5/6 is not reproduced.
  ctx.reply().verbatim("Redis ver. 8.0.1\n");
}

// --- LATENCY ----------------------------------------------------------------------------

/// The latency-monitor-threshold setting in milliseconds.
int64_t latency_threshold(const Engine& engine) {
  const DirectiveSpec* spec = find_directive("latency-monitor-threshold");
  int64_t v = 0;
  return spec != nullptr && parse_i64(directive_value(*spec, engine.config()), v) ? v : 0;
}

void cmd_latency_doctor(CmdContext& ctx) {
  // keyshift records no latency events, so the report is one of Valkey's two empty ones.
  if (latency_threshold(ctx.engine()) == 0) {
    ctx.reply().verbatim(
        "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Valkey "
        "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in "
        "order to enable it.\n");
  } else {
    ctx.reply().verbatim(
        "No latency spike was observed during the lifetime of this Valkey instance, not in the "
        "slightest bit.\n");
  }
}

void cmd_latency_graph(CmdContext& ctx) {
  ctx.reply().error(std::string(errors::k_no_latency_samples_prefix) + std::string(ctx.arg(2)) +
                    "'");
}

void cmd_latency_history(CmdContext& ctx) {
  ctx.reply().array(0);
}
void cmd_latency_latest(CmdContext& ctx) {
  ctx.reply().array(0);
}
void cmd_latency_reset(CmdContext& ctx) {
  ctx.reply().integer(0);
}
void cmd_latency_histogram(CmdContext& ctx) {
  ctx.reply().map(0);
}

void cmd_latency_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "DOCTOR",
                      "    Return a human readable latency analysis report.",
                      "GRAPH <event>",
                      "    Return an ASCII latency graph for the <event> class.",
                      "HISTORY <event>",
                      "    Return time-latency samples for the <event> class.",
                      "LATEST",
                      "    Return the latest latency samples for all events.",
                      "RESET [<event> ...]",
                      "    Reset latency data of one or more <event> classes.",
                      "    (default: reset all data for all event classes)",
                      "HISTOGRAM [COMMAND ...]",
                      "    Return a cumulative distribution of latencies in the format of a "
                      "histogram for the specified command names.",
                      "    If no commands are specified then all histograms are replied.",
                  });
}

// --- SLOWLOG ----------------------------------------------------------------------------

void cmd_slowlog_get(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  const auto& log = ctx.engine().slowlog();
  int64_t count = 10;
  if (ctx.argc() == 3) {
    if (!parse_i64(ctx.arg(2), count) || count < -1) {
      ctx.reply().error(errors::k_slowlog_count);
      return;
    }
    if (count == -1) {
      count = static_cast<int64_t>(log.size());
    }
  }
  size_t n = std::min(static_cast<size_t>(count), log.size());
  ReplyBuilder& r = ctx.reply();
  r.array(n);
  for (size_t i = 0; i < n; ++i) {
    const SlowLogEntry& e = log[i];
    r.array(6);
    r.integer(static_cast<int64_t>(e.id));
    r.integer(e.time_sec);
    r.integer(e.duration_us);
    r.array(e.argv.size());
    for (const std::string& a : e.argv) {
      r.bulk(a);
    }
    r.bulk(e.peer);
    r.bulk(e.client_name);
  }
}

void cmd_slowlog_len(CmdContext& ctx) {
  ctx.reply().integer(static_cast<int64_t>(ctx.engine().slowlog().size()));
}

void cmd_slowlog_reset(CmdContext& ctx) {
  ctx.engine().slowlog_reset();
  ctx.reply().ok();
}

void cmd_slowlog_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "GET [<count>]",
                      "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                      "    Entries are made of:",
                      "    id, timestamp, time in microseconds, arguments array, client IP and "
                      "port,",
                      "    client name",
                      "LEN",
                      "    Return the length of the slowlog.",
                      "RESET",
                      "    Reset the slowlog.",
                  });
}

// --- Registration -----------------------------------------------------------------------

// Rows as Valkey 8.0.1's commands.def has them (tests check every row against the generated
// table). Containers have no handler.
constexpr uint32_t k_ls = k_cmd_loading | k_cmd_stale;
constexpr uint32_t k_admin = k_cmd_admin | k_cmd_noscript | k_ls;
constexpr std::string_view k_admin_acl = "@admin @slow @dangerous";
constexpr std::string_view k_conn_acl = "@slow @connection";

constexpr CommandSpec k_server_commands[] = {
    {"info", -1, k_ls, 0, 0, 0, cmd_info, "@slow @dangerous"},
    {"config", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"config|get", -3, k_admin, 0, 0, 0, cmd_config_get, k_admin_acl},
    {"config|set", -4, k_admin, 0, 0, 0, cmd_config_set, k_admin_acl},
    {"config|resetstat", 2, k_admin, 0, 0, 0, cmd_config_resetstat, k_admin_acl},
    {"config|rewrite", 2, k_admin, 0, 0, 0, cmd_config_rewrite, k_admin_acl},
    {"config|help", 2, k_ls, 0, 0, 0, cmd_config_help, "@slow"},
    {"flushdb", -1, k_cmd_write, 0, 0, 0, cmd_flushdb, "@keyspace @write @slow @dangerous"},
    {"flushall", -1, k_cmd_write, 0, 0, 0, cmd_flushall, "@keyspace @write @slow @dangerous"},
    {"dbsize", 1, k_cmd_readonly | k_cmd_fast, 0, 0, 0, cmd_dbsize, "@keyspace @read @fast"},
    {"time", 1, k_ls | k_cmd_fast, 0, 0, 0, cmd_time, "@fast"},
    {"shutdown", -1, k_admin | k_cmd_no_multi | k_cmd_allow_busy, 0, 0, 0, cmd_shutdown,
     k_admin_acl},
    {"latency", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"latency|doctor", 2, k_admin, 0, 0, 0, cmd_latency_doctor, k_admin_acl},
    {"latency|graph", 3, k_admin, 0, 0, 0, cmd_latency_graph, k_admin_acl},
    {"latency|help", 2, k_ls, 0, 0, 0, cmd_latency_help, "@slow"},
    {"latency|histogram", -2, k_admin, 0, 0, 0, cmd_latency_histogram, k_admin_acl},
    {"latency|history", 3, k_admin, 0, 0, 0, cmd_latency_history, k_admin_acl},
    {"latency|latest", 2, k_admin, 0, 0, 0, cmd_latency_latest, k_admin_acl},
    {"latency|reset", -2, k_admin, 0, 0, 0, cmd_latency_reset, k_admin_acl},
    {"slowlog", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"slowlog|get", -2, k_cmd_admin | k_ls, 0, 0, 0, cmd_slowlog_get, k_admin_acl},
    {"slowlog|help", 2, k_ls, 0, 0, 0, cmd_slowlog_help, "@slow"},
    {"slowlog|len", 2, k_cmd_admin | k_ls, 0, 0, 0, cmd_slowlog_len, k_admin_acl},
    {"slowlog|reset", 2, k_cmd_admin | k_ls, 0, 0, 0, cmd_slowlog_reset, k_admin_acl},
    {"role", 1, k_cmd_noscript | k_ls | k_cmd_fast, 0, 0, 0, cmd_role, "@admin @fast @dangerous"},
    {"lolwut", -1, k_cmd_readonly | k_cmd_fast, 0, 0, 0, cmd_lolwut, "@read @fast"},
};

}  // namespace

void register_server_family(CommandRegistry& registry) {
  registry.add(k_server_commands);
}

}  // namespace keyshift::engine

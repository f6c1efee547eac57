#include "migrate/import/live_target.hpp"

#include "engine/resp/resp_value.hpp"
#include "engine/util/split_args.hpp"

#include <charconv>
#include <thread>

namespace keyshift::migrate {
namespace {

/// The value of `field:` in INFO text, or empty.
std::string_view info_field(std::string_view info, std::string_view field) {
  size_t at = 0;
  while (at < info.size()) {
    size_t end = info.find('\n', at);
    std::string_view line = info.substr(at, end == std::string_view::npos ? end : end - at);
    if (line.ends_with('\r')) {
      line.remove_suffix(1);
    }
    if (line.size() > field.size() && line.starts_with(field) && line[field.size()] == ':') {
      return line.substr(field.size() + 1);
    }
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  return {};
}

/// Major and minor of "7.0.15".
std::pair<int, int> major_minor(std::string_view version) {
  int major = 0;
  int minor = 0;
  auto r = std::from_chars(version.data(), version.data() + version.size(), major);
  if (r.ptr < version.data() + version.size() && *r.ptr == '.') {
    std::from_chars(r.ptr + 1, version.data() + version.size(), minor);
  }
  return {major, minor};
}

/// Bytes of requests allowed to wait for their replies.
constexpr size_t k_max_unanswered_bytes = size_t{8} << 20;

std::string reply_text(const engine::ReplyView& reply) {
  return reply.is_error ? std::string(reply.error_text) : std::string(reply.bytes);
}

}  // namespace

engine::Expected<TargetServer, std::string> identify_server(std::string_view info) {
  TargetServer server;
  std::string_view valkey = info_field(info, "valkey_version");
  std::string_view redis = info_field(info, "redis_version");
  if (!info_field(info, "keyshift_version").empty()) {
    server.name = "keyshift";
  } else {
    server.name = valkey.empty() ? "redis" : "valkey";
  }
  server.version = std::string(valkey.empty() ? redis : valkey);
  if (server.version.empty()) {
    return engine::Unexpected{std::string("INFO server names no redis_version or valkey_version")};
  }
  auto [major, minor] = major_minor(server.version);
  if (valkey.empty() && major < 7) {
    return engine::Unexpected{
        "Redis " + server.version +
        " reads RDB 9 or older, which keyshift does not write (7.0 or newer)"};
  }
  // The newest release line of the knowledge base at or before this version: a release
  // newer than any line known reads at least what the newest known one reads.
  std::string_view project = valkey.empty() ? "redis" : "valkey";
  std::optional<RdbTarget> best;
  std::pair<int, int> best_at{-1, -1};
  for (std::string_view name : rdb_target_names()) {
    if (!name.starts_with(project) || name.size() <= project.size()) {
      continue;
    }
    auto at = major_minor(name.substr(project.size() + 1));
    if (at <= std::pair{major, minor} && at > best_at) {
      best_at = at;
      best = parse_rdb_target(name);
    }
  }
  if (!best) {
    return engine::Unexpected{"no RDB facts for " + std::string(project) + " " + server.version};
  }
  server.rdb = *best;
  return server;
}

void restore_args(std::vector<std::string_view>& args, std::string_view key, int64_t expire_ms,
                  std::string_view payload, bool replace, int64_t idle_s, int freq,
                  char (&scratch)[48]) {
  char* ttl_end = std::to_chars(scratch, scratch + 24, expire_ms >= 0 ? expire_ms : 0).ptr;
  args.clear();
  args.insert(args.end(),
              {"RESTORE", key, std::string_view(scratch, ttl_end - scratch), payload, "ABSTTL"});
  if (replace) {
    args.push_back("REPLACE");
  }
  char* extra = scratch + 24;
  if (idle_s >= 0) {
    auto end = std::to_chars(extra, extra + 24, idle_s).ptr;
    args.insert(args.end(), {"IDLETIME", std::string_view(extra, end - extra)});
  } else if (freq >= 0) {
    auto end = std::to_chars(extra, extra + 24, freq).ptr;
    args.insert(args.end(), {"FREQ", std::string_view(extra, end - extra)});
  }
}

LiveTarget::LiveTarget(engine::PipelinedConnection link, TargetServer server)
    : m_link(std::move(link)), m_server(std::move(server)) {}

engine::Expected<bool, std::string> wait_until_loaded(engine::PipelinedConnection& link,
                                                      const LoadingWait& wait) {
  auto started = std::chrono::steady_clock::now();
  for (bool told = false;; told = true) {
    link.send({"PING"});
    auto reply = link.wait_reply();
    if (!reply) {
      return engine::Unexpected{reply.error()};
    }
    if (!reply->is_error || !reply->error_text.starts_with("LOADING")) {
      return true;
    }
    auto waited = std::chrono::steady_clock::now() - started;
    if (waited >= wait.limit) {
      return engine::Unexpected{
          link.endpoint().describe() + " was still loading its dataset after " +
          std::to_string(wait.limit.count()) + " s: " + std::string(reply->error_text)};
    }
    if (!told && wait.notice) {
      wait.notice(link.endpoint().describe() + " is loading its dataset; waiting (up to " +
                  std::to_string(wait.limit.count()) + " s)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

engine::Expected<LiveTarget, std::string> LiveTarget::open(const engine::RespEndpoint& endpoint,
                                                           uint32_t window,
                                                           const LoadingWait& loading) {
  auto link = engine::PipelinedConnection::connect(endpoint, window);
  if (!link) {
    return engine::Unexpected{link.error()};
  }
  if (auto loaded = wait_until_loaded(*link, loading); !loaded) {
    return engine::Unexpected{loaded.error()};
  }
  link->send({"INFO", "server"});
  auto reply = link->wait_reply();
  if (!reply) {
    return engine::Unexpected{reply.error()};
  }
  if (reply->is_error) {
    return engine::Unexpected{"INFO server failed on " + endpoint.describe() + ": " +
                              std::string(reply->error_text)};
  }
  engine::RespValue value;
  size_t used = 0;
  engine::parse_resp(reply->bytes, value, used);
  auto server = identify_server(value.str);
  if (!server) {
    return engine::Unexpected{endpoint.describe() + ": " + server.error()};
  }
  LiveTarget target(std::move(*link), std::move(*server));
  target.m_db = static_cast<uint64_t>(endpoint.db);
  return target;
}

engine::Expected<bool, std::string> RestoreTarget::send_part(uint64_t, std::string_view key,
                                                             std::span<const std::string_view>) {
  return engine::Unexpected{"key " + engine::quote_repr(key) + ": " + describe() +
                            " takes keys by RESTORE only; a key written as commands (a big key, "
                            "or --method commands) cannot go to it"};
}

engine::Expected<bool, std::string> RestoreTarget::send_last(PendingKey pending,
                                                             std::span<const std::string_view>,
                                                             std::span<const std::string_view>) {
  return send_part(pending.db, pending.key, {});
}

engine::Expected<std::optional<std::string>, std::string> RestoreTarget::config_value(
    std::string_view) {
  return std::optional<std::string>{};
}

engine::Expected<bool, std::string> LiveTarget::select(uint64_t db) {
  if (m_db == db) {
    return true;
  }
  if (auto room = take_replies(false); !room) {
    return room;
  }
  std::string number = std::to_string(db);
  m_link.send({"SELECT", number});
  m_pending.push_back(Sent{});
  m_db = db;
  return true;
}

engine::Expected<bool, std::string> LiveTarget::room(size_t bytes) {
  if (auto ok = take_replies(false); !ok) {
    return ok;
  }
  while (m_unanswered_bytes > 0 && m_unanswered_bytes + bytes > k_max_unanswered_bytes) {
    size_t before = m_pending.size();
    if (auto ok = take_replies(false); !ok) {
      return ok;
    }
    if (m_pending.size() == before) {
      auto io = m_link.poll(std::chrono::milliseconds(30000));
      if (io != engine::PipelinedConnection::Io::ok) {
        return engine::Unexpected{m_link.failed()
                                      ? m_link.error()
                                      : "the target " + describe() + " did not answer within 30 s"};
      }
    }
  }
  return true;
}

engine::Expected<bool, std::string> LiveTarget::send_part(uint64_t db, std::string_view key,
                                                          std::span<const std::string_view> args) {
  if (auto ok = select(db); !ok) {
    return ok;
  }
  size_t bytes = 0;
  for (std::string_view a : args) {
    bytes += a.size() + 16;
  }
  if (auto ok = room(bytes); !ok) {
    return ok;
  }
  m_link.send(args);
  m_bytes_sent += bytes;
  m_unanswered_bytes += bytes;
  Sent sent;
  sent.key.db = db;
  sent.key.key = key;
  sent.role = Role::part;
  sent.bytes = bytes;
  m_pending.push_back(std::move(sent));
  return true;
}

engine::Expected<bool, std::string> LiveTarget::send_last(
    PendingKey pending, std::span<const std::string_view> args,
    std::span<const std::string_view> cleanup) {
  if (auto ok = select(pending.db); !ok) {
    return ok;
  }
  size_t bytes = 0;
  for (std::string_view a : args) {
    bytes += a.size() + 16;
  }
  if (auto ok = room(bytes); !ok) {
    return ok;
  }
  m_link.send(args);
  m_bytes_sent += bytes;
  m_unanswered_bytes += bytes;
  if (cleanup.empty()) {
    m_pending.push_back(Sent{std::move(pending), Role::last, bytes});
    return true;
  }
  m_link.send(cleanup);
  m_pending.push_back(Sent{pending, Role::last, bytes});
  m_pending.push_back(Sent{std::move(pending), Role::cleanup, 0});
  return true;
}

engine::Expected<bool, std::string> LiveTarget::restore(PendingKey pending, int64_t expire_ms,
                                                        std::string_view payload, bool replace,
                                                        int64_t idle_s, int freq) {
  if (auto ok = select(pending.db); !ok) {
    return ok;
  }
  if (auto ok = room(payload.size()); !ok) {
    return ok;
  }
  char scratch[48];
  restore_args(m_args, pending.key, expire_ms, payload, replace, idle_s, freq, scratch);
  m_link.send(std::span<const std::string_view>(m_args));
  m_bytes_sent += payload.size() + pending.key.size();
  m_unanswered_bytes += payload.size();
  m_pending.push_back(Sent{std::move(pending), Role::restore, payload.size()});
  return true;
}

engine::Expected<bool, std::string> LiveTarget::command(PendingKey pending,
                                                        std::span<const std::string_view> argv,
                                                        std::optional<uint64_t> db) {
  if (db) {
    if (auto ok = select(*db); !ok) {
      return ok;
    }
  }
  if (auto room = take_replies(false); !room) {
    return room;
  }
  m_link.send(argv);
  for (std::string_view a : argv) {
    m_bytes_sent += a.size();
  }
  pending.command = true;
  m_pending.push_back(Sent{std::move(pending), Role::command, 0});
  return true;
}

engine::Expected<bool, std::string> LiveTarget::take_replies(bool wait_all) {
  for (;;) {
    engine::ReplyView reply;
    while (m_link.next_reply(reply)) {
      Sent sent = std::move(m_pending.front());
      m_pending.pop_front();
      m_unanswered_bytes -= sent.bytes;
      const PendingKey& pending = sent.key;
      auto refused = [&] {
        return engine::Unexpected{"the target " + describe() + " refused key " +
                                  engine::quote_repr(pending.key) + " (db " +
                                  std::to_string(pending.db) + "): " + reply_text(reply)};
      };
      WriteOutcome outcome = WriteOutcome::written;
      switch (sent.role) {
        case Role::select:
          if (reply.is_error) {
            return engine::Unexpected{"SELECT failed on " + describe() + ": " + reply_text(reply)};
          }
          continue;
        case Role::part:
          if (reply.is_error) {
            return refused();
          }
          continue;
        case Role::command:
          if (reply.is_error) {
            return engine::Unexpected{"the target " + describe() + " refused " + pending.key +
                                      " (db " + std::to_string(pending.db) +
                                      "): " + reply_text(reply)};
          }
          break;
        case Role::restore:
          if (reply.is_error) {
            if (m_skip_conflicts && reply.error_text.starts_with("BUSYKEY")) {
              outcome = WriteOutcome::conflict_skipped;
            } else {
              return refused();
            }
          }
          break;
        case Role::last:
          if (reply.is_error) {
            if (!reply.error_text.starts_with("ERR no such key")) {
              return refused();
            }
            outcome = WriteOutcome::expired_in_flight;
          } else if (reply.is_null || reply.bytes == ":0\r\n") {
            if (!m_skip_conflicts) {
              return engine::Unexpected{"the target " + describe() + " already has key " +
                                        engine::quote_repr(pending.key) + " (db " +
                                        std::to_string(pending.db) + ")"};
            }
            outcome = WriteOutcome::conflict_skipped;
          }
          if (!m_pending.empty() && m_pending.front().role == Role::cleanup) {
            m_held = outcome;
            continue;
          }
          break;
        case Role::cleanup:
          if (reply.is_error) {
            return refused();
          }
          outcome = m_held;
          break;
      }
      if (m_on_ack) {
        m_on_ack(pending, outcome);
      }
    }
    if (m_link.failed()) {
      return engine::Unexpected{m_link.error()};
    }
    bool done = wait_all ? m_link.in_flight() == 0 && !m_link.wants_write() : m_link.can_send();
    if (done) {
      return true;
    }
    auto io = m_link.poll(std::chrono::milliseconds(30000));
    if (io == engine::PipelinedConnection::Io::failed) {
      return engine::Unexpected{m_link.error()};
    }
    if (io == engine::PipelinedConnection::Io::blocked) {
      return engine::Unexpected{"the target " + describe() + " did not answer within 30 s"};
    }
  }
}

engine::Expected<bool, std::string> LiveTarget::drain() {
  return take_replies(true);
}

engine::Expected<std::optional<std::string>, std::string> LiveTarget::config_value(
    std::string_view name) {
  if (auto ok = drain(); !ok) {
    return engine::Unexpected{ok.error()};
  }
  m_link.send({"CONFIG", "GET", name});
  auto reply = m_link.wait_reply();
  if (!reply) {
    return engine::Unexpected{reply.error()};
  }
  if (reply->is_error) {
    return std::optional<std::string>();
  }
  engine::RespValue value;
  size_t used = 0;
  engine::parse_resp(reply->bytes, value, used);
  // RESP2: [name, value]; RESP3: a map, read by the parser as its pairs.
  if (value.elements.size() >= 2) {
    return std::optional<std::string>(value.elements[1].str);
  }
  return std::optional<std::string>();
}

engine::Expected<std::vector<std::string>, std::string> LiveTarget::existing(
    uint64_t db, const std::vector<std::string>& keys) {
  if (auto ok = drain(); !ok) {
    return engine::Unexpected{ok.error()};
  }
  std::string number = std::to_string(db);
  m_link.send({"SELECT", number});
  m_db = db;
  auto selected = m_link.wait_reply();
  if (!selected || selected->is_error) {
    return engine::Unexpected{"SELECT " + number + " failed on " + describe() + ": " +
                              (selected ? reply_text(*selected) : selected.error())};
  }
  std::vector<std::string> found;
  size_t next = 0;
  size_t answered = 0;
  while (answered < keys.size()) {
    while (next < keys.size() && m_link.can_send()) {
      m_link.send({"EXISTS", keys[next]});
      ++next;
    }
    auto reply = m_link.wait_reply();
    if (!reply) {
      return engine::Unexpected{reply.error()};
    }
    if (reply->is_error) {
      return engine::Unexpected{"EXISTS failed on " + describe() + ": " + reply_text(*reply)};
    }
    if (reply->bytes != ":0\r\n") {
      found.push_back(keys[answered]);
    }
    ++answered;
  }
  return found;
}

}  // namespace keyshift::migrate

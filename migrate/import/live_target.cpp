#include "migrate/import/live_target.hpp"

#include "engine/resp/resp_value.hpp"
#include "engine/util/split_args.hpp"

#include <charconv>

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
  if (!valkey.empty()) {
    if (major >= 9) {
      server.rdb = minor >= 2 || major > 9 ? RdbTarget::valkey_9_2 : RdbTarget::valkey_9_0;
    } else {
      server.rdb = major == 7 ? RdbTarget::valkey_7_2 : RdbTarget::valkey_8_0;
    }
    return server;
  }
  if (major < 7) {
    return engine::Unexpected{
        "Redis " + server.version +
        " reads RDB 9 or older, which keyshift does not write (7.0 or newer)"};
  }
  if (major == 7 && minor < 2) {
    server.rdb = RdbTarget::redis_7_0;
  } else if (major == 7 && minor < 4) {
    server.rdb = RdbTarget::redis_7_2;
  } else {
    server.rdb = RdbTarget::redis_7_4;  // Redis 8 still writes RDB 12
  }
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

engine::Expected<LiveTarget, std::string> LiveTarget::open(const engine::RespEndpoint& endpoint,
                                                           uint32_t window) {
  auto link = engine::PipelinedConnection::connect(endpoint, window);
  if (!link) {
    return engine::Unexpected{link.error()};
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

engine::Expected<bool, std::string> LiveTarget::select(uint64_t db) {
  if (m_db == db) {
    return true;
  }
  if (auto room = take_replies(false); !room) {
    return room;
  }
  std::string number = std::to_string(db);
  m_link.send({"SELECT", number});
  m_pending.emplace_back(std::nullopt);
  m_db = db;
  return true;
}

engine::Expected<bool, std::string> LiveTarget::restore(PendingKey pending, int64_t expire_ms,
                                                        std::string_view payload, bool replace,
                                                        int64_t idle_s, int freq) {
  if (auto ok = select(pending.db); !ok) {
    return ok;
  }
  if (auto room = take_replies(false); !room) {
    return room;
  }
  char scratch[48];
  restore_args(m_args, pending.key, expire_ms, payload, replace, idle_s, freq, scratch);
  m_link.send(std::span<const std::string_view>(m_args));
  m_bytes_sent += payload.size() + pending.key.size();
  m_pending.emplace_back(std::move(pending));
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
  m_pending.emplace_back(std::move(pending));
  return true;
}

engine::Expected<bool, std::string> LiveTarget::take_replies(bool wait_all) {
  for (;;) {
    engine::ReplyView reply;
    while (m_link.next_reply(reply)) {
      std::optional<PendingKey> pending = std::move(m_pending.front());
      m_pending.pop_front();
      if (!pending) {
        if (reply.is_error) {
          return engine::Unexpected{"SELECT failed on " + describe() + ": " + reply_text(reply)};
        }
        continue;
      }
      WriteOutcome outcome = WriteOutcome::written;
      if (reply.is_error && pending->command) {
        return engine::Unexpected{"the target " + describe() + " refused " + pending->key +
                                  " (db " + std::to_string(pending->db) +
                                  "): " + reply_text(reply)};
      }
      if (reply.is_error) {
        if (m_skip_conflicts && reply.error_text.starts_with("BUSYKEY")) {
          outcome = WriteOutcome::conflict_skipped;
        } else {
          return engine::Unexpected{"the target " + describe() + " refused key " +
                                    engine::quote_repr(pending->key) + " (db " +
                                    std::to_string(pending->db) + "): " + reply_text(reply)};
        }
      }
      if (m_on_ack) {
        m_on_ack(*pending, outcome);
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

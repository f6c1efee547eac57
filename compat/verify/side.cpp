#include "compat/verify/side.hpp"

#include "compat/dump/jsonl_reader.hpp"
#include "compat/verify/cluster_side.hpp"
#include "compat/verify/snapshot_side.hpp"
#include "engine/engine.hpp"
#include "engine/persistence/aof.hpp"
#include "engine/persistence/rdb_load.hpp"
#include "engine/resp/cluster_map.hpp"
#include "engine/resp/request_writer.hpp"
#include "engine/resp/server_url.hpp"
#include "engine/util/mapped_file.hpp"

#include <fmt/core.h>

#include <charconv>
#include <filesystem>
#include <span>
#include <string_view>
#include <utility>

namespace keyshift::compat {
namespace {

using engine::Expected;
using engine::RespValue;
using engine::Unexpected;

/// Databases an in-process engine gets: enough for any file a server wrote.
constexpr int k_file_databases = 16;

bool is_url(std::string_view spec) {
  for (std::string_view scheme : {"redis://", "rediss://", "tcp://", "tls://", "unix://", "unix:",
                                  "redis+unix://", "redis-socket://", "valkey://", "valkeys://"}) {
    if (spec.substr(0, scheme.size()) == scheme) {
      return true;
    }
  }
  return false;
}

/// "key:value" lines of an INFO section; the value of `field` or empty.
std::string_view info_field(std::string_view info, std::string_view field) {
  size_t at = 0;
  while (at < info.size()) {
    size_t end = info.find('\n', at);
    if (end == std::string_view::npos) {
      end = info.size();
    }
    std::string_view line = info.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.size() > field.size() && line.substr(0, field.size()) == field &&
        line[field.size()] == ':') {
      return line.substr(field.size() + 1);
    }
    at = end + 1;
  }
  return {};
}

/// "db3:keys=10,expires=2,avg_ttl=0" lines into {3: 10}.
std::map<int, uint64_t> keyspace_of(std::string_view info) {
  std::map<int, uint64_t> out;
  size_t at = 0;
  while (at < info.size()) {
    size_t end = info.find('\n', at);
    if (end == std::string_view::npos) {
      end = info.size();
    }
    std::string_view line = info.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, 2) != "db") {
      continue;
    }
    int db = 0;
    auto [p, ec] = std::from_chars(line.data() + 2, line.data() + line.size(), db);
    std::string_view rest(p, static_cast<size_t>(line.data() + line.size() - p));
    if (ec != std::errc() || rest.substr(0, 6) != ":keys=") {
      continue;
    }
    uint64_t keys = 0;
    std::from_chars(rest.data() + 6, rest.data() + rest.size(), keys);
    out[db] = keys;
  }
  return out;
}

/// Redis before 7.2 prints digest scores with %.17g; 7.2+, Valkey and keyshift use the
/// shortest form.
engine::ScoreFormat score_format_of(std::string_view info) {
  if (!info_field(info, "valkey_version").empty()) {
    return engine::ScoreFormat::grisu2;
  }
  std::string_view version = info_field(info, "redis_version");
  int major = 0;
  int minor = 0;
  auto [p, ec] = std::from_chars(version.data(), version.data() + version.size(), major);
  if (ec == std::errc() && p < version.data() + version.size() && *p == '.') {
    std::from_chars(p + 1, version.data() + version.size(), minor);
  }
  if (major < 7 || (major == 7 && minor < 2)) {
    return engine::ScoreFormat::printf_17g;
  }
  return engine::ScoreFormat::grisu2;
}

}  // namespace

Expected<std::vector<RespValue>, std::string> VerifySide::run(const CommandBatch& batch) {
  auto sent = submit(batch);
  if (!sent) {
    return Unexpected{sent.error()};
  }
  return collect();
}

// ---- ServerSide ---------------------------------------------------------------------------

Expected<std::unique_ptr<ServerSide>, std::string> ServerSide::connect(
    const engine::RespEndpoint& endpoint) {
  auto connection = engine::RespConnection::connect(endpoint);
  if (!connection) {
    return Unexpected{connection.error()};
  }
  return std::unique_ptr<ServerSide>(new ServerSide(std::move(*connection)));
}

Expected<bool, std::string> ServerSide::submit(const CommandBatch& batch) {
  m_out.clear();
  for (const auto& command : batch) {
    engine::append_request(m_out, std::span<const std::string>(command));
  }
  m_outstanding = batch.size();
  if (m_out.empty()) {
    return true;
  }
  return m_connection.send_raw(m_out);
}

Expected<std::vector<RespValue>, std::string> ServerSide::collect() {
  std::vector<RespValue> replies;
  replies.reserve(m_outstanding);
  for (size_t i = 0; i < m_outstanding; ++i) {
    auto reply = m_connection.read_reply();
    if (!reply) {
      m_outstanding = 0;
      return Unexpected{reply.error()};
    }
    replies.push_back(std::move(*reply));
  }
  m_outstanding = 0;
  return replies;
}

// ---- EngineSide ---------------------------------------------------------------------------

EngineSide::EngineSide(engine::Engine& engine, std::string name)
    : m_engine(engine), m_session(engine.open_session(nullptr)), m_name(std::move(name)) {}

EngineSide::~EngineSide() {
  m_engine.close_session(m_session);
}

Expected<bool, std::string> EngineSide::submit(const CommandBatch& batch) {
  m_replies.clear();
  m_replies.reserve(batch.size());
  std::vector<std::string_view> argv;
  for (const auto& command : batch) {
    argv.assign(command.begin(), command.end());
    m_replies.push_back(m_engine.run(m_session, argv));
  }
  return true;
}

Expected<std::vector<RespValue>, std::string> EngineSide::collect() {
  return std::move(m_replies);
}

// ---- LoadedFileSide -----------------------------------------------------------------------

LoadedFileSide::~LoadedFileSide() {
  m_side.reset();  // its session belongs to the engine
  m_engine.reset();
}

Expected<std::unique_ptr<LoadedFileSide>, std::string> LoadedFileSide::load(
    const std::string& path) {
  if (engine::looks_like_aof(path)) {
    std::unique_ptr<LoadedFileSide> side(new LoadedFileSide());
    engine::EngineConfig config;
    config.databases = k_file_databases;
    config.enable_debug_command = engine::EnableMode::yes;
    side->m_engine = std::make_unique<engine::Engine>(config, side->m_clock);
    engine::AofReadOptions read;
    read.allow_truncated = false;
    std::string name = std::filesystem::path(path).filename().string();
    if (name.ends_with(".manifest")) {
      read.appendfilename = name.substr(0, name.size() - std::string_view(".manifest").size());
    }
    engine::AofLoadReport report;
    auto loaded = engine::replay_aof(*side->m_engine, path, read, report);
    if (!loaded) {
      return Unexpected{loaded.error()};
    }
    side->m_side = std::make_unique<EngineSide>(*side->m_engine, path);
    return side;
  }
  auto mapped = engine::MappedFile::open(path);
  if (!mapped) {
    return Unexpected{fmt::format("{}: cannot read the file: {}", path, mapped.error().reason())};
  }
  std::unique_ptr<LoadedFileSide> side(new LoadedFileSide());
  engine::EngineConfig config;
  config.databases = k_file_databases;
  // verify's own session asks DEBUG DIGEST-VALUE of the loaded data.
  config.enable_debug_command = engine::EnableMode::yes;
  side->m_engine = std::make_unique<engine::Engine>(config, side->m_clock);
  std::string_view bytes = mapped->data();
  bool is_rdb = bytes.substr(0, 5) == "REDIS" || bytes.substr(0, 6) == "VALKEY";
  if (is_rdb) {
    auto loaded = engine::load_rdb(*side->m_engine, bytes);
    if (!loaded) {
      return Unexpected{fmt::format("{}: error at byte {}: {}", path, loaded.error().offset,
                                    loaded.error().message)};
    }
  } else {
    auto loaded = load_jsonl(*side->m_engine, bytes);
    if (!loaded) {
      return Unexpected{fmt::format("{}:{}", path, loaded.error())};
    }
  }
  side->m_side = std::make_unique<EngineSide>(*side->m_engine, path);
  return side;
}

Expected<std::unique_ptr<VerifySide>, std::string> open_verify_side(
    const std::string& spec, const engine::TlsClientOptions& tls, bool snapshot) {
  if (is_url(spec)) {
    auto endpoint = engine::parse_redis_url(spec, tls);
    if (!endpoint) {
      return Unexpected{fmt::format("{}: {}", spec, endpoint.error())};
    }
    {
      // A cluster node stands for its cluster: every primary is listed and read.
      auto probe = engine::RespConnection::connect(*endpoint);
      if (!probe) {
        return Unexpected{probe.error()};
      }
      auto cluster = engine::is_cluster_node(*probe);
      if (!cluster) {
        return Unexpected{cluster.error()};
      }
      if (*cluster && snapshot) {
        return Unexpected{
            fmt::format("{}: --snapshot takes single servers; compare a cluster without it", spec)};
      }
      if (*cluster) {
        if (endpoint->db != 0) {
          return Unexpected{fmt::format("{}: a cluster has only database 0", spec)};
        }
        auto side = ClusterSide::connect(*endpoint);
        if (!side) {
          return Unexpected{side.error()};
        }
        return std::unique_ptr<VerifySide>(std::move(*side));
      }
    }
    auto parts = engine::parse_server_url(spec);
    bool pinned = parts && ((parts->db_path && !parts->db_path->empty()) ||
                            parts->param({"db", "database"}) >= 0);
    if (snapshot) {
      auto side = SnapshotSide::take(*endpoint);
      if (!side) {
        return Unexpected{side.error()};
      }
      if (pinned) {
        (*side)->pin_db(endpoint->db);
      }
      return std::unique_ptr<VerifySide>(std::move(*side));
    }
    auto side = ServerSide::connect(*endpoint);
    if (!side) {
      return Unexpected{side.error()};
    }
    if (pinned) {
      (*side)->pin_db(endpoint->db);
    }
    return std::unique_ptr<VerifySide>(std::move(*side));
  }
  auto side = LoadedFileSide::load(spec);
  if (!side) {
    return Unexpected{side.error()};
  }
  return std::unique_ptr<VerifySide>(std::move(*side));
}

Expected<SideFacts, std::string> probe_side(VerifySide& side) {
  auto replies = side.run({{"INFO", "server"},
                           {"INFO", "keyspace"},
                           {"DEBUG", "DIGEST-VALUE", "__keyshift_verify_probe__"},
                           {"HPEXPIRETIME", "__keyshift_verify_probe__", "FIELDS", "1", "f"}});
  if (!replies) {
    return Unexpected{replies.error()};
  }
  const RespValue& server = (*replies)[0];
  const RespValue& keyspace = (*replies)[1];
  if (server.is_error() || keyspace.is_error()) {
    return Unexpected{fmt::format("{}: INFO failed: {}", side.describe(),
                                  server.is_error() ? server.str : keyspace.str)};
  }
  SideFacts facts;
  facts.version = std::string(info_field(server.str, "redis_version"));
  facts.score_format = score_format_of(server.str);
  facts.keys_per_db = keyspace_of(keyspace.str);
  facts.digest_value = (*replies)[2].type == RespValue::Type::array;
  // Redis 7.4 answers an absent key with an empty array, later versions with [-2]: any
  // reply but an error means the command exists.
  facts.field_ttls = !(*replies)[3].is_error();
  return facts;
}

}  // namespace keyshift::compat

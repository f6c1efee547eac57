#pragma once

#include "engine/keyspace/digest.hpp"
#include "engine/resp/connection.hpp"
#include "engine/resp/resp_value.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace keyshift::engine {
class Engine;
class Session;
}  // namespace keyshift::engine

namespace keyshift::compat {

/// A batch of commands for one side.
using CommandBatch = std::vector<std::vector<std::string>>;

/// One side of a comparison: something that answers commands, a live server or a dataset
/// loaded into an in-process engine. Commands go out in batches: submit() sends one and
/// collect() returns its replies in order, so that verify can keep both sides busy at once
/// (submit to both, then collect from both).
class VerifySide {
 public:
  virtual ~VerifySide() = default;
  /// What the side is, for reports ("unix:/run/redis.sock", "dump.rdb").
  virtual std::string describe() const = 0;
  /// Sends a batch; at most one batch is outstanding.
  virtual engine::Expected<bool, std::string> submit(const CommandBatch& batch) = 0;
  /// The replies to the outstanding batch, one per command.
  virtual engine::Expected<std::vector<engine::RespValue>, std::string> collect() = 0;
  /// The database the side's URL names, which it is compared in alone; nullopt: all.
  virtual std::optional<int> url_db() const { return std::nullopt; }
  /// The side's dataset when this process holds it (a loaded file, a snapshot): two such
  /// sides are compared in-process in round 1. Null for a side only reached by commands.
  virtual engine::Engine* dataset() { return nullptr; }
  /// submit() then collect().
  engine::Expected<std::vector<engine::RespValue>, std::string> run(const CommandBatch& batch);
};

/// A live server through a blocking RespConnection: a batch is written in one go and its
/// replies read afterwards. (A non-blocking pipelined connection can replace it behind
/// this interface.)
class ServerSide final : public VerifySide {
 public:
  /// Connects to `endpoint`.
  static engine::Expected<std::unique_ptr<ServerSide>, std::string> connect(
      const engine::RespEndpoint& endpoint);
  /// Pins the side to `db` (its URL named it).
  void pin_db(int db) { m_url_db = db; }
  std::optional<int> url_db() const override { return m_url_db; }
  std::string describe() const override { return m_connection.endpoint().describe(); }
  engine::Expected<bool, std::string> submit(const CommandBatch& batch) override;
  engine::Expected<std::vector<engine::RespValue>, std::string> collect() override;

 private:
  explicit ServerSide(engine::RespConnection connection) : m_connection(std::move(connection)) {}
  engine::RespConnection m_connection;
  std::optional<int> m_url_db;
  std::string m_out;
  size_t m_outstanding = 0;
};

/// An engine in this process (an RDB or JSON Lines file loaded into it, or a test's): the
/// commands run straight through its dispatch, no network.
class EngineSide final : public VerifySide {
 public:
  /// Runs commands on `engine` (which must outlive the side) through a session of its own.
  EngineSide(engine::Engine& engine, std::string name);
  ~EngineSide() override;
  EngineSide(const EngineSide&) = delete;
  EngineSide& operator=(const EngineSide&) = delete;
  std::string describe() const override { return m_name; }
  engine::Engine* dataset() override { return &m_engine; }
  engine::Expected<bool, std::string> submit(const CommandBatch& batch) override;
  engine::Expected<std::vector<engine::RespValue>, std::string> collect() override;

 private:
  engine::Engine& m_engine;
  engine::Session& m_session;
  std::string m_name;
  std::vector<engine::RespValue> m_replies;
};

/// A file's dataset in an engine that the side owns.
class LoadedFileSide final : public VerifySide {
 public:
  /// Loads `path`: an RDB file (recognised by its REDIS/VALKEY magic) or JSON Lines as
  /// `keyshift rdb dump` writes them. Errors name the file and the byte offset or line.
  static engine::Expected<std::unique_ptr<LoadedFileSide>, std::string> load(
      const std::string& path);
  ~LoadedFileSide() override;
  std::string describe() const override { return m_side->describe(); }
  engine::Engine* dataset() override { return m_engine.get(); }
  engine::Expected<bool, std::string> submit(const CommandBatch& batch) override {
    return m_side->submit(batch);
  }
  engine::Expected<std::vector<engine::RespValue>, std::string> collect() override {
    return m_side->collect();
  }

 private:
  LoadedFileSide() = default;
  engine::SystemClock m_clock;
  std::unique_ptr<engine::Engine> m_engine;
  std::unique_ptr<EngineSide> m_side;
};

/// Opens a side from its command-line form: a server URL (redis://, unix://, ...; read by
/// parse_redis_url) or a file path.
/// `tls` (the --tls, --cacert, ... flags) is merged into a TCP server's TLS options. With
/// `snapshot`, a single server is opened as a SnapshotSide (a cluster is refused).
engine::Expected<std::unique_ptr<VerifySide>, std::string> open_verify_side(
    const std::string& spec, const engine::TlsClientOptions& tls = {}, bool snapshot = false);

/// What verify learned about a side before comparing.
struct SideFacts {
  /// DEBUG DIGEST-VALUE answers (enable-debug-command allows this client).
  bool digest_value = false;
  /// HPEXPIRETIME answers (Redis 7.4+ and keyshift: hash fields may have TTLs).
  bool field_ttls = false;
  /// How the side's DEBUG DIGEST-VALUE formats sorted-set scores.
  engine::ScoreFormat score_format = engine::ScoreFormat::grisu2;
  /// The server's version text from INFO ("7.0.15"); empty when unknown.
  std::string version;
  /// Keys per database from INFO keyspace.
  std::map<int, uint64_t> keys_per_db;
};

/// Asks `side` INFO, a DEBUG DIGEST-VALUE probe and an HPEXPIRETIME probe.
engine::Expected<SideFacts, std::string> probe_side(VerifySide& side);

}  // namespace keyshift::compat

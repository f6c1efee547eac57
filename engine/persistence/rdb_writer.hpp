#pragma once

#include "engine/keyspace/entry.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine {

class Engine;

/// How to write.
struct RdbWriteOptions {
  /// 10 (Redis 7.0), 11 (Valkey 7.2/8.x, Redis 7.2), 12 (Redis 7.4: hashes with field TTLs),
  /// 80 (Valkey 9.0) or 81 (Valkey 9.2).
  int version = rdb::k_default_write_version;
  /// Try LZF on strings longer than 20 bytes (rdbcompression).
  bool compress = true;
  /// Write the CRC64 trailer; false writes zero (rdbchecksum no).
  bool checksum = true;
  /// Function libraries' code, written as FUNCTION2 records (carried over by rdb convert).
  std::vector<std::string> functions;
};

/// What a save wrote.
struct RdbWriteStats {
  uint64_t keys = 0;
  uint64_t bytes = 0;
};

/// Appends the RDB encoding of `e`'s value as `options.version` writes it, with the compact
/// encodings a real server writes for small values; returns the type byte. Fails (naming
/// why) when the version cannot hold the value, e.g. field TTLs below version 12.
Expected<uint8_t, std::string> encode_rdb_value(const Entry& e, const RdbWriteOptions& options,
                                                std::string& out);

/// The DUMP payload of `e`: the value, the 2-byte RDB version and the CRC64 of both.
Expected<std::string, std::string> dump_payload(const Entry& e, const RdbWriteOptions& options);

/// The DUMP payload of a value already encoded (a value's bytes as an RDB file stores them
/// after the key): the type byte, the bytes, `version` and the CRC64. Used to move values
/// between servers without decoding them.
std::string dump_payload_of_encoded(uint8_t type, std::string_view encoded, int version);

/// A DUMP payload whose version and checksum passed.
struct CheckedDumpPayload {
  uint8_t type = 0;       // the type byte as stored (its meaning depends on `version`)
  int version = 0;        // the 2-byte RDB version of the footer
  std::string_view body;  // every byte after the type, the footer included (as Valkey reads)
};

/// FUNCTION DUMP's payload: a FUNCTION2 record per library code, the RDB version and the
/// CRC64, as Valkey writes it (`compress`: rdbcompression).
std::string functions_dump_payload(std::span<const std::string> codes, bool compress);

/// Whether RESTORE takes a payload of RDB `version`: 0-12 and Valkey 9's 80-81; any other
/// version gets Valkey's "DUMP payload version or checksum are wrong".
bool dump_version_readable(int version);

/// Checks a DUMP payload's version (before its CRC64, as Valkey's verifyDumpPayload does)
/// and its CRC64.
Expected<CheckedDumpPayload, std::string> check_dump_payload(std::string_view payload);

/// Writes every database of `engine` as one RDB file to the descriptor `fd` (a pipe to a
/// diskless full sync's replicas, or save_rdb's temporary file); nothing is synced or closed.
Expected<RdbWriteStats, std::string> write_rdb(
    Engine& engine, int fd, const RdbWriteOptions& options,
    const std::vector<std::pair<std::string, std::string>>& aux = {});

/// Writes every database of `engine` to `path` as one RDB file: into a temporary file in the
/// same directory, fsync'ed, then renamed over `path`, so `path` is never half written.
/// `aux` are extra AUX fields after Valkey's own (valkey-ver, ctime, used-mem, ...).
Expected<RdbWriteStats, std::string> save_rdb(
    Engine& engine, const std::string& path, const RdbWriteOptions& options,
    const std::vector<std::pair<std::string, std::string>>& aux = {});

}  // namespace keyshift::engine

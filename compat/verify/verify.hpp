#pragma once

#include "compat/verify/side.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// `keyshift verify data SOURCE TARGET`: are two datasets the same? Both ways: every key of
// the source is looked up on the target (type, TTL, value) and every key of the target
// that the source did not list is looked up on the source. Values are read in chunks and
// fingerprinted here (the cheapest way for the servers, measured on Redis 7.0), or on
// request compared by DEBUG DIGEST-VALUE or DUMP payload first, with every mismatch read
// to decide. Keys that differ are compared again in later
// rounds after a pause (as RedisFullCheck does), and those that agree by then are reported
// apart: they changed or expired while verify ran.
namespace keyshift::compat {

/// Why a key differs.
enum class DiffReason : uint8_t {
  missing_on_target,
  missing_on_source,
  type,
  ttl,
  value,
  /// A hash's fields are equal but their TTLs (HPEXPIRETIME) are not.
  field_ttl,
};

/// "missing_on_target", ... (the JSON names).
std::string_view diff_reason_name(DiffReason reason);

/// A key as one side saw it: TYPE ("none" when absent) and PTTL (-1 without a TTL, -2 when
/// absent).
struct KeyState {
  std::string type = "none";
  int64_t pttl = -2;
};

/// One key that differs.
struct KeyDifference {
  int db = 0;
  std::string key;
  std::vector<DiffReason> reasons;  // at least one
  KeyState source;
  KeyState target;
  /// A read that failed midway (the key changed under it), for the report.
  std::string detail;
};

/// Keys compared in one database.
struct DbSummary {
  int db = 0;
  uint64_t keys = 0;
  /// Keys by type (the source's, or the target's when the source had none).
  std::map<std::string, uint64_t> types;
  uint64_t differences = 0;
  uint64_t changed = 0;
  /// The target's keys were listed too; false when its DBSIZE showed that the source's
  /// listing had found them all.
  bool reverse_scanned = true;
};

/// How far a comparison is.
struct VerifyProgress {
  int round = 1;
  uint64_t keys_done = 0;
  /// Keys expected in round 1 (from INFO keyspace, scaled by the sample), or the keys to
  /// compare again in later rounds.
  uint64_t keys_total = 0;
};

/// How to compare.
struct VerifyOptions {
  /// PTTLs (and hash field expiry times) further apart than this (ms) are a difference.
  int64_t ttl_tolerance_ms = 1000;
  /// Compare only this share of the keys (0 < p <= 100), chosen by a hash of the key so the
  /// same keys are picked on both sides.
  double sample_percent = 100;
  /// Rounds in all: round 1 compares every key, later ones only those that differed.
  int rounds = 3;
  /// Pause before each later round, in milliseconds.
  int64_t pause_ms = 2000;
  /// SCAN COUNT: keys compared per batch.
  size_t scan_count = 1000;
  /// Elements per chunked read (LRANGE/ZRANGE/HSCAN/SSCAN/XRANGE; KiB for strings).
  size_t chunk = 512;
  /// Compare lists, sets, sorted sets, hashes and streams up to 64 KiB by their DUMP
  /// payloads; payloads that differ are read here. Off by default: measured on Redis 7.0,
  /// DUMP (LZF, CRC64) and MEMORY USAGE cost a server more than plain reads.
  bool dump = false;
  /// Compare values by DEBUG DIGEST-VALUE where both sides allow it: less traffic, but the
  /// SHA-1 work makes it the dearest way for the servers' CPU.
  bool server_digest = false;
  /// Round 1 compares two sides that both hold their datasets in this process (files,
  /// snapshots) in-process; off, they are sent commands as live servers are.
  bool in_process = true;
  /// Only this database.
  std::optional<int> db;
  /// Only keys matching this glob (SCAN MATCH).
  std::string match;
  /// Waits `pause_ms` before round `round`; empty: sleep. Injected so tests never sleep.
  std::function<void(int round, int64_t pause_ms)> pause;
  /// Monotonic seconds, for the report's duration; empty: steady_clock.
  std::function<double()> clock;
  /// Called after each batch; may be empty.
  std::function<void(const VerifyProgress&)> progress;
};

/// What a comparison found.
struct VerifyReport {
  std::string source;
  std::string target;
  SideFacts source_facts;
  SideFacts target_facts;
  VerifyOptions options;
  /// DEBUG DIGEST-VALUE compared values (of every type but, across server generations,
  /// sorted sets).
  bool server_digest = false;
  /// Round 1 compared two datasets held in this process (files, --snapshot) by value
  /// digests, with no command per key.
  bool in_process = false;
  /// Hash field TTLs were compared (either side has HPEXPIRETIME; the other, if it lacks
  /// it, holds none).
  bool field_ttls = false;
  std::vector<DbSummary> dbs;
  uint64_t keys_compared = 0;
  /// Values found equal by their DUMP payloads and by server digests.
  uint64_t values_by_dump = 0;
  uint64_t values_by_digest = 0;
  /// Values compared element by element in this process (round 1 of two datasets here).
  uint64_t values_in_process = 0;
  /// Keys whose values were read and fingerprinted here, and the commands that took.
  uint64_t values_read = 0;
  uint64_t read_commands = 0;
  /// Differences left after the last round.
  std::vector<KeyDifference> differences;
  /// Keys that differed in a round and agreed in a later one, as first seen.
  std::vector<KeyDifference> changed;
  int rounds_run = 0;
  double seconds = 0;
  /// Seconds spent opening the sides before the comparison (files loaded, snapshots taken);
  /// the caller that opened them sets it.
  double setup_seconds = 0;
  /// No difference is left.
  bool equal() const { return differences.empty(); }
};

/// Compares `source` with `target`; an error (a side failing, a reply that makes no sense)
/// stops the comparison.
engine::Expected<VerifyReport, std::string> verify_data(VerifySide& source, VerifySide& target,
                                                        const VerifyOptions& options);

/// The text report: a summary per database, then the first `max_listed` differences and
/// changed keys with their reasons.
std::string render_verify_text(const VerifyReport& report, size_t max_listed);

/// The JSON report (one object, keys as JSON-escaped bytes); see man keyshift-verify.
std::string render_verify_json(const VerifyReport& report, size_t max_listed);

/// The stderr progress line ("\rkeyshift verify: round 1: 120000/200000 keys 60%").
std::string verify_progress_line(const VerifyProgress& progress, double elapsed_seconds);

}  // namespace keyshift::compat

#pragma once

#include "compat/verify/fingerprint.hpp"
#include "engine/resp/resp_value.hpp"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace keyshift::compat {

/// Reads one value from a server in chunks (GETRANGE, LRANGE, ZRANGE by index, HSCAN,
/// SSCAN, XRANGE ... COUNT), so a big key never arrives in one reply, and fingerprints it.
/// It only says which command comes next and takes its reply, so a caller can pipeline the
/// readers of many keys together.
class ValueReader {
 public:
  /// A reader of `key`, whose TYPE said `kind`; `chunk` elements (bytes for a string, times
  /// 1024) per command. With `field_ttls` (the server has HPEXPIRETIME), each HSCAN page of
  /// a hash is followed by HPEXPIRETIME of its fields, so field TTLs are read page by page
  /// and only the fields that have one are kept.
  ValueReader(std::string key, ValueKind kind, size_t chunk, bool field_ttls = false);

  /// The next command to send; only while !done().
  std::vector<std::string> next_command() const;
  /// Takes the reply to the last next_command(). An error or a reply of the wrong shape
  /// (the key changed type meanwhile) ends the reader with failed().
  void feed(const engine::RespValue& reply);
  /// True once the whole value was read, or reading failed.
  bool done() const { return m_done; }
  /// True when a reply was an error or not what the command returns.
  bool failed() const { return m_failed; }
  /// The reply text that failed the reader.
  const std::string& failure() const { return m_failure; }
  /// Commands sent for this value.
  uint64_t commands() const { return m_commands; }
  /// The fingerprint of what was read (meaningful once done() and !failed()).
  Fingerprint fingerprint() const { return m_builder.finish(); }
  /// The hash fields that have a TTL, as (hash of the field name, unix time in ms), sorted by
  /// field hash; empty unless read with `field_ttls`.
  std::vector<std::pair<uint64_t, int64_t>> field_expiries() const;

 private:
  void fail(std::string why);
  /// Takes HPEXPIRETIME's reply for the last page's fields.
  void feed_expiries(const engine::RespValue& reply);
  /// True the first time `element` is seen: HSCAN/SSCAN may repeat an element when the
  /// table is resized between calls, and a repeat must not count twice.
  bool first_sight(std::string_view element);

  std::string m_key;
  ValueKind m_kind;
  size_t m_chunk;
  FingerprintBuilder m_builder;
  uint64_t m_offset = 0;            // string bytes / list and zset index read so far
  std::string m_cursor = "0";       // HSCAN / SSCAN cursor
  std::string m_stream_from = "-";  // XRANGE start
  bool m_scanning = false;          // a SCAN-family read went past its first page
  std::unordered_set<uint64_t> m_seen;
  bool m_field_ttls = false;
  std::vector<std::string> m_page_fields;  // the last HSCAN page's fields, for HPEXPIRETIME
  bool m_expiry_next = false;              // HPEXPIRETIME of m_page_fields comes next
  std::vector<std::pair<uint64_t, int64_t>> m_expiries;
  bool m_done = false;
  bool m_failed = false;
  std::string m_failure;
  uint64_t m_commands = 0;
};

}  // namespace keyshift::compat

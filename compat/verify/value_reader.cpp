#include "compat/verify/value_reader.hpp"

#include "engine/util/hash.hpp"

#include <algorithm>
#include <utility>

namespace keyshift::compat {
namespace {

using engine::RespValue;

constexpr uint64_t k_seen_seed = 0x5ca9d11e5ull;
constexpr size_t k_string_chunk_factor = 1024;
constexpr uint64_t k_field_seed = 0x6669656c64ull;

bool is_bulk(const RespValue& v) {
  return v.type == RespValue::Type::bulk || v.type == RespValue::Type::simple;
}

bool is_array(const RespValue& v) {
  return v.type == RespValue::Type::array || v.type == RespValue::Type::set ||
         v.type == RespValue::Type::map;
}

}  // namespace

ValueReader::ValueReader(std::string key, ValueKind kind, size_t chunk, bool field_ttls)
    : m_key(std::move(key)),
      m_kind(kind),
      m_chunk(chunk == 0 ? 1 : chunk),
      m_builder(kind),
      m_field_ttls(field_ttls && kind == ValueKind::hash) {}

std::vector<std::pair<uint64_t, int64_t>> ValueReader::field_expiries() const {
  std::vector<std::pair<uint64_t, int64_t>> out = m_expiries;
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ValueReader::next_command() const {
  if (m_expiry_next) {
    std::vector<std::string> cmd{"HPEXPIRETIME", m_key, "FIELDS",
                                 std::to_string(m_page_fields.size())};
    cmd.insert(cmd.end(), m_page_fields.begin(), m_page_fields.end());
    return cmd;
  }
  switch (m_kind) {
    case ValueKind::string: {
      uint64_t bytes = m_chunk * k_string_chunk_factor;
      return {"GETRANGE", m_key, std::to_string(m_offset), std::to_string(m_offset + bytes - 1)};
    }
    case ValueKind::list:
      return {"LRANGE", m_key, std::to_string(m_offset), std::to_string(m_offset + m_chunk - 1)};
    case ValueKind::zset:
      return {"ZRANGE", m_key, std::to_string(m_offset), std::to_string(m_offset + m_chunk - 1),
              "WITHSCORES"};
    case ValueKind::hash:
      return {"HSCAN", m_key, m_cursor, "COUNT", std::to_string(m_chunk)};
    case ValueKind::set:
      return {"SSCAN", m_key, m_cursor, "COUNT", std::to_string(m_chunk)};
    case ValueKind::stream:
      return {"XRANGE", m_key, m_stream_from, "+", "COUNT", std::to_string(m_chunk)};
  }
  return {};
}

void ValueReader::fail(std::string why) {
  m_failed = true;
  m_done = true;
  m_failure = std::move(why);
}

bool ValueReader::first_sight(std::string_view element) {
  return m_seen.insert(engine::hash_bytes(element, k_seen_seed)).second;
}

void ValueReader::feed(const RespValue& reply) {
  ++m_commands;
  if (reply.is_error()) {
    fail(reply.str);
    return;
  }
  if (m_expiry_next) {
    feed_expiries(reply);
    return;
  }
  switch (m_kind) {
    case ValueKind::string: {
      if (!is_bulk(reply)) {
        fail("GETRANGE did not return a string");
        return;
      }
      m_builder.add_ordered(reply.str);
      m_offset += reply.str.size();
      if (reply.str.size() < m_chunk * k_string_chunk_factor) {
        m_done = true;
      }
      return;
    }
    case ValueKind::list:
    case ValueKind::zset: {
      if (!is_array(reply)) {
        fail("a range read did not return an array");
        return;
      }
      size_t step = m_kind == ValueKind::zset ? 2 : 1;
      if (reply.elements.size() % step != 0) {
        fail("ZRANGE WITHSCORES returned an odd number of elements");
        return;
      }
      for (size_t i = 0; i < reply.elements.size(); i += step) {
        const RespValue& e = reply.elements[i];
        if (m_kind == ValueKind::list) {
          m_builder.add_ordered(e.str);
        } else if (!m_builder.add_scored(e.str, reply.elements[i + 1].str)) {
          fail("ZRANGE returned a score that is not a number");
          return;
        }
      }
      m_offset += reply.elements.size() / step;
      if (reply.elements.size() / step < m_chunk) {
        m_done = true;
      }
      return;
    }
    case ValueKind::hash:
    case ValueKind::set: {
      if (!is_array(reply) || reply.elements.size() != 2 || !is_array(reply.elements[1])) {
        fail("a SCAN-family read did not return [cursor, elements]");
        return;
      }
      m_cursor = reply.elements[0].str;
      // A value read in one page cannot repeat an element; past it, repeats are dropped.
      m_scanning = m_scanning || m_cursor != "0";
      const std::vector<RespValue>& items = reply.elements[1].elements;
      size_t step = m_kind == ValueKind::hash ? 2 : 1;
      if (items.size() % step != 0) {
        fail("HSCAN returned an odd number of elements");
        return;
      }
      for (size_t i = 0; i < items.size(); i += step) {
        if (m_scanning && !first_sight(items[i].str)) {
          continue;
        }
        if (m_kind == ValueKind::hash) {
          m_builder.add_pair(items[i].str, items[i + 1].str);
          if (m_field_ttls) {
            m_page_fields.push_back(items[i].str);
          }
        } else {
          m_builder.add_member(items[i].str);
        }
      }
      m_expiry_next = !m_page_fields.empty();
      if (m_cursor == "0" && !m_expiry_next) {
        m_done = true;
      }
      return;
    }
    case ValueKind::stream: {
      if (!is_array(reply)) {
        fail("XRANGE did not return an array");
        return;
      }
      for (const RespValue& entry : reply.elements) {
        if (entry.elements.size() != 2 || !is_array(entry.elements[1]) ||
            entry.elements[1].elements.size() % 2 != 0) {
          fail("XRANGE returned an entry that is not [id, [field, value...]]");
          return;
        }
        m_builder.add_ordered(entry.elements[0].str, 1);
        for (const RespValue& piece : entry.elements[1].elements) {
          m_builder.add_ordered(piece.str, 2);
        }
        m_stream_from = "(" + entry.elements[0].str;
      }
      if (reply.elements.size() < m_chunk) {
        m_done = true;
      }
      return;
    }
  }
}

void ValueReader::feed_expiries(const RespValue& reply) {
  if (!is_array(reply) || reply.elements.size() != m_page_fields.size()) {
    fail("HPEXPIRETIME did not return one time per field");
    return;
  }
  for (size_t i = 0; i < m_page_fields.size(); ++i) {
    const RespValue& t = reply.elements[i];
    if (t.type != RespValue::Type::integer) {
      fail("HPEXPIRETIME returned something other than an integer");
      return;
    }
    if (t.integer == -2) {
      fail("a field went away while the hash was read");
      return;
    }
    if (t.integer >= 0) {
      m_expiries.emplace_back(engine::hash_bytes(m_page_fields[i], k_field_seed), t.integer);
    }
  }
  m_page_fields.clear();
  m_expiry_next = false;
  if (m_cursor == "0") {
    m_done = true;
  }
}

}  // namespace keyshift::compat

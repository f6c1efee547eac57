#include "engine/keyspace/entry_compare.hpp"

#include "engine/keyspace/entry_digest.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace keyshift::engine {
namespace {

/// Two small values kept as the same bare block (listpack or intset) byte for byte: equal
/// without a lookup per element (the usual case when both sides came from one dataset).
template <typename Value>
bool same_block(const Value& a, const Value& b) {
  if constexpr (requires { a.encoding(); }) {
    if (a.encoding() != b.encoding()) {
      return false;
    }
  }
  const uint8_t* ba = a.block();
  const uint8_t* bb = b.block();
  if constexpr (requires { a.block_bytes(); }) {
    return ba != nullptr && bb != nullptr && a.block_bytes() == b.block_bytes() &&
           std::memcmp(ba, bb, a.block_bytes()) == 0;
  } else {
    return ba != nullptr && bb != nullptr && a.bytes() == b.bytes() &&
           std::memcmp(ba, bb, a.bytes()) == 0;
  }
}

bool lists_equal(const ListValue& a, const ListValue& b) {
  if (a.encoding() == ObjEncoding::listpack && b.encoding() == ObjEncoding::listpack &&
      same_block(a.listpack(), b.listpack())) {
    return true;
  }
  if (a.size() != b.size()) {
    return false;
  }
  ListValue::Reader ra(a, 0, true);
  ListValue::Reader rb(b, 0, true);
  for (; ra.valid() && rb.valid(); ra.advance(), rb.advance()) {
    if (!(ra.value() == rb.value())) {
      return false;
    }
  }
  return ra.valid() == rb.valid();
}

bool sets_equal(const SetValue& a, const SetValue& b) {
  if (same_block(a, b)) {
    return true;
  }
  if (a.size() != b.size()) {
    return false;
  }
  bool equal = true;
  a.for_each([&](const SetMember& m) { equal = equal && b.contains(m); });
  return equal;
}

bool zsets_equal(const ZSetValue& a, const ZSetValue& b) {
  if (same_block(a, b)) {
    return true;
  }
  if (a.size() != b.size()) {
    return false;
  }
  bool equal = true;
  a.for_each([&](std::string_view member, double score) {
    double other = 0;
    equal = equal && b.score(member, other) && other == score;
  });
  return equal;
}

ValueMatch hashes_match(const HashValue& a, const HashValue& b, int64_t tolerance_ms) {
  if (same_block(a, b)) {
    return ValueMatch::equal;  // field TTLs included: listpackex keeps them in the block
  }
  if (a.size() != b.size()) {
    return ValueMatch::value;
  }
  ValueMatch out = ValueMatch::equal;
  HashBuf buf;
  a.for_each([&](const HashField& f) {
    if (out == ValueMatch::value) {
      return;
    }
    HashField other;
    if (!b.find(f.field, other, buf) || other.value != f.value) {
      out = ValueMatch::value;
      return;
    }
    bool ttl_a = f.expire_ms != k_hash_no_expire;
    bool ttl_b = other.expire_ms != k_hash_no_expire;
    if (ttl_a != ttl_b || (ttl_a && std::llabs(f.expire_ms - other.expire_ms) > tolerance_ms)) {
      out = ValueMatch::field_ttl;
    }
  });
  return out;
}

/// A stream's live entries as one byte string (IDs, then each field and value with its
/// length), so two streams compare with one memcmp whatever their node layout.
std::string stream_entries(const StreamValue& s) {
  std::string out;
  char fbuf[24];
  char vbuf[24];
  auto put = [&out](std::string_view bytes) {
    uint64_t n = bytes.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(bytes);
  };
  s.range({}, StreamId::max(), false, [&](const StreamEntryView& e) {
    out.append(reinterpret_cast<const char*>(&e.id.ms), sizeof(e.id.ms));
    out.append(reinterpret_cast<const char*>(&e.id.seq), sizeof(e.id.seq));
    uint64_t fields = e.fields.size();
    out.append(reinterpret_cast<const char*>(&fields), sizeof(fields));
    for (const auto& [f, v] : e.fields) {
      put(f.view(fbuf));
      put(v.view(vbuf));
    }
    return true;
  });
  return out;
}

bool streams_equal(const StreamValue& a, const StreamValue& b) {
  return a.length() == b.length() && stream_entries(a) == stream_entries(b);
}

}  // namespace

ValueMatch compare_values(const Entry* a, const Entry* b, int64_t field_ttl_tolerance_ms) {
  if (a->type() != b->type()) {
    return ValueMatch::value;
  }
  bool equal = false;
  switch (a->type()) {
    case ObjType::string: {
      IntBuffer ba;
      IntBuffer bb;
      equal = string_of(a, ba) == string_of(b, bb);
      break;
    }
    case ObjType::list:
      equal = lists_equal(*static_cast<const ListValue*>(a->object()),
                          *static_cast<const ListValue*>(b->object()));
      break;
    case ObjType::set:
      equal = sets_equal(*SetRef(a), *SetRef(b));
      break;
    case ObjType::zset:
      equal = zsets_equal(*ZSetRef(a), *ZSetRef(b));
      break;
    case ObjType::hash:
      return hashes_match(*HashRef(a), *HashRef(b), field_ttl_tolerance_ms);
    case ObjType::stream:
      equal = streams_equal(*static_cast<const StreamValue*>(a->object()),
                            *static_cast<const StreamValue*>(b->object()));
      break;
    default:
      equal = value_digest(a, {}) == value_digest(b, {});  // module values: their seed
      break;
  }
  return equal ? ValueMatch::equal : ValueMatch::value;
}

}  // namespace keyshift::engine

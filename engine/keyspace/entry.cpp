#include "engine/keyspace/entry.hpp"

#include <bit>

namespace keyshift::engine {
namespace {

size_t write_varint(char* p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  p[n++] = static_cast<char>(v);
  return n;
}

size_t read_varint(const char* p, uint64_t& v) {
  v = 0;
  size_t n = 0;
  int shift = 0;
  while (true) {
    uint8_t b = static_cast<uint8_t>(p[n++]);
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      return n;
    }
    shift += 7;
  }
}

/// Frees a listpack/intset block an entry owned, uncounting its usable size.
void free_blob(MemoryCounter& mem, uint8_t* blob) {
  if (blob != nullptr) {
    mem.add(-static_cast<int64_t>(MemoryCounter::usable_size(blob)));
    MemoryCounter::raw_deallocate(blob);
  }
}

}  // namespace

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

const char* type_name(ObjType type) {
  switch (type) {
    case ObjType::string:
      return "string";
    case ObjType::list:
      return "list";
    case ObjType::set:
      return "set";
    case ObjType::zset:
      return "zset";
    case ObjType::hash:
      return "hash";
    case ObjType::module:
      return "module";
    case ObjType::stream:
      return "stream";
  }
  return "unknown";
}

const char* encoding_name(ObjEncoding encoding) {
  switch (encoding) {
    case ObjEncoding::raw:
      return "raw";
    case ObjEncoding::int_:
      return "int";
    case ObjEncoding::hashtable:
      return "hashtable";
    case ObjEncoding::zipmap:
      return "zipmap";
    case ObjEncoding::linkedlist:
      return "linkedlist";
    case ObjEncoding::ziplist:
      return "ziplist";
    case ObjEncoding::intset:
      return "intset";
    case ObjEncoding::skiplist:
      return "skiplist";
    case ObjEncoding::embstr:
      return "embstr";
    case ObjEncoding::quicklist:
      return "quicklist";
    case ObjEncoding::stream:
      return "stream";
    case ObjEncoding::listpack:
      return "listpack";
    case ObjEncoding::listpack_ex:
      return "listpackex";
  }
  return "unknown";
}

size_t Entry::value_size(const ValueSpec& value) {
  switch (value.kind) {
    case Kind::integer:
      return 8;
    case Kind::object:
      return sizeof(HeapObject*);
    case Kind::blob:
      return sizeof(uint8_t*);
    case Kind::inline_bytes:
      break;
  }
  return varint_size(value.bytes.size()) + value.bytes.size();
}

void Entry::write_value(char* p, const ValueSpec& value) {
  switch (value.kind) {
    case Kind::integer:
      std::memcpy(p, &value.integer, 8);
      return;
    case Kind::object:
      std::memcpy(p, &value.object, sizeof(HeapObject*));
      return;
    case Kind::blob:
      std::memcpy(p, &value.blob, sizeof(uint8_t*));
      return;
    case Kind::inline_bytes:
      break;
  }
  size_t n = write_varint(p, value.bytes.size());
  if (!value.bytes.empty()) {
    std::memcpy(p + n, value.bytes.data(), value.bytes.size());
  }
}

Entry* Entry::make(MemoryCounter& mem, std::string_view key, const ValueSpec& value,
                   int64_t expire_ms) {
  bool with_expire = expire_ms >= 0;
  size_t size = k_expire_offset + (with_expire ? k_expire_size : 0) + varint_size(key.size()) +
                key.size() + value_size(value);
  char* p = static_cast<char*>(mem.allocate(size));
  Entry* e = reinterpret_cast<Entry*>(p);
  e->next() = nullptr;
  e->set_meta((static_cast<uint32_t>(value.type) << 24) |
              (static_cast<uint32_t>(value.encoding) << 28));
  e->set_flags(
      static_cast<uint8_t>(static_cast<uint8_t>(value.kind) | (with_expire ? k_has_expire : 0)));
  if (with_expire) {
    e->set_expire_ms(expire_ms);
    e->set_expire_slot(0);
  }
  char* k = p + e->key_offset();
  size_t n = write_varint(k, key.size());
  if (!key.empty()) {
    std::memcpy(k + n, key.data(), key.size());
  }
  write_value(k + n + key.size(), value);
  return e;
}

Entry* Entry::relayout(MemoryCounter& mem, const Entry* src, bool with_expire) {
  std::string_view key = src->key();
  const char* value = src->value_ptr();
  size_t vsize = src->kind() == Kind::inline_bytes
                     ? [&] {
                         uint64_t len;
                         size_t n = read_varint(value, len);
                         return n + static_cast<size_t>(len);
                       }()
                     : 8;
  size_t size = k_expire_offset + (with_expire ? k_expire_size : 0) + varint_size(key.size()) +
                key.size() + vsize;
  char* p = static_cast<char*>(mem.allocate(size));
  Entry* e = reinterpret_cast<Entry*>(p);
  e->next() = nullptr;
  e->set_meta(src->meta());
  e->set_flags(
      static_cast<uint8_t>((src->flags() & ~k_has_expire) | (with_expire ? k_has_expire : 0)));
  if (with_expire) {
    e->set_expire_ms(src->has_expire() ? src->expire_ms() : 0);
    e->set_expire_slot(src->has_expire() ? src->expire_slot() : 0);
  }
  char* k = p + e->key_offset();
  size_t n = write_varint(k, key.size());
  std::memcpy(k + n, key.data(), key.size());
  std::memcpy(k + n + key.size(), value, vsize);
  return e;
}

void Entry::destroy(MemoryCounter& mem, Entry* e) {
  if (e->kind() == Kind::object) {
    HeapObject* o = e->object();
    mem.add(-static_cast<int64_t>(o->bytes()));
    delete o;
  } else if (e->kind() == Kind::blob) {
    free_blob(mem, e->blob());
  }
  mem.deallocate(e);
}

void Entry::destroy_shell(MemoryCounter& mem, Entry* e) {
  mem.deallocate(e);
}

std::string_view Entry::key() const {
  const char* p = bytes() + key_offset();
  uint64_t len;
  size_t n = read_varint(p, len);
  return std::string_view(p + n, static_cast<size_t>(len));
}

const char* Entry::value_ptr() const {
  const char* p = bytes() + key_offset();
  uint64_t len;
  size_t n = read_varint(p, len);
  return p + n + len;
}

std::string_view Entry::inline_bytes() const {
  const char* p = value_ptr();
  uint64_t len;
  size_t n = read_varint(p, len);
  return std::string_view(p + n, static_cast<size_t>(len));
}

bool Entry::fits(MemoryCounter& mem, const ValueSpec& value) const {
  (void)mem;
  size_t needed = static_cast<size_t>(value_ptr() - bytes()) + value_size(value);
  size_t have = MemoryCounter::usable_size(this);
  // Do not keep a block much larger than needed: shrinking values should release memory.
  return needed <= have && have - needed < 32;
}

void Entry::assign(MemoryCounter& mem, const ValueSpec& value) {
  if (kind() == Kind::object) {
    HeapObject* o = object();
    mem.add(-static_cast<int64_t>(o->bytes()));
    delete o;
  } else if (kind() == Kind::blob) {
    free_blob(mem, blob());
  }
  set_meta((meta() & 0x00FFFFFFu) | (static_cast<uint32_t>(value.type) << 24) |
           (static_cast<uint32_t>(value.encoding) << 28));
  set_flags(static_cast<uint8_t>((flags() & ~k_kind_mask) | static_cast<uint8_t>(value.kind)));
  write_value(value_ptr(), value);
}

size_t Entry::bytes_used() const {
  size_t n = MemoryCounter::usable_size(this);
  if (kind() == Kind::object) {
    n += object()->bytes();
  } else if (kind() == Kind::blob && blob() != nullptr) {
    n += MemoryCounter::usable_size(blob());
  }
  return n;
}

void Entry::switch_slot(Kind kind, void* ptr, ObjEncoding enc) {
  set_flags(static_cast<uint8_t>((flags() & ~k_kind_mask) | static_cast<uint8_t>(kind)));
  std::memcpy(value_ptr(), &ptr, sizeof(ptr));
  set_encoding(enc);
}

// Block headers are little-endian; this reads them with plain loads.
static_assert(std::endian::native == std::endian::little);

size_t Entry::blob_size() const {
  const uint8_t* b = blob();
  if (b == nullptr) {
    return 0;
  }
  uint32_t a = 0;
  uint32_t c = 0;
  std::memcpy(&a, b, 4);
  if (encoding() != ObjEncoding::intset) {
    return a;  // a listpack's header starts with its total bytes
  }
  std::memcpy(&c, b + 4, 4);
  return 8 + size_t{a} * c;  // an intset's header: width, then count
}

}  // namespace keyshift::engine

#pragma once

#include <cstddef>
#include <cstdint>

namespace keyshift::engine {

/// Value types, numbered as Valkey's OBJ_* so that TYPE and RDB code can share them.
enum class ObjType : uint8_t {
  string = 0,
  list = 1,
  set = 2,
  zset = 3,
  hash = 4,
  module = 5,
  stream = 6,
};

/// In-memory encodings as OBJECT ENCODING reports them, numbered as Valkey's OBJ_ENCODING_*.
enum class ObjEncoding : uint8_t {
  raw = 0,
  int_ = 1,
  hashtable = 2,
  zipmap = 3,
  linkedlist = 4,
  ziplist = 5,
  intset = 6,
  skiplist = 7,
  embstr = 8,
  quicklist = 9,
  stream = 10,
  listpack = 11,
  listpack_ex = 12,  // Redis 7.4: a listpack hash whose fields may carry a TTL
};

/// Name TYPE prints for `type`.
const char* type_name(ObjType type);
/// Name OBJECT ENCODING prints for `encoding`.
const char* encoding_name(ObjEncoding encoding);

/// A value that lives outside its key's entry (large strings, collections). Each type
/// keeps its own memory count so that used-memory stays exact without a walk.
class HeapObject {
 public:
  virtual ~HeapObject() = default;
  /// Bytes this object holds, including itself.
  virtual size_t bytes() const = 0;
  /// A deep copy that shares nothing with this object (COPY); the caller owns it.
  virtual HeapObject* clone() const = 0;
};

}  // namespace keyshift::engine

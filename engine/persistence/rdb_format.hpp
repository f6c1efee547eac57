#pragma once

#include <cstdint>
#include <string_view>

// The RDB file format as Redis 2.x..7.4 and Valkey 7.2..9.x write it: value types, opcodes
// and length encodings. Numbers are the on-disk bytes; never renumber.
namespace keyshift::engine::rdb {

/// Oldest and newest RDB versions read ("REDIS0001".."REDIS0012").
inline constexpr int k_min_version = 1;
inline constexpr int k_max_version = 12;
/// Valkey 9's own numbering ("VALKEY080"): Valkey left 12-79 to Redis ("foreign") and
/// writes 80 from 9.0 on and 81 from 9.2 on (valkey-io/valkey src/rdb.h, RDB_VERSION_MAP).
/// 81 adds one object type, the Path Hash (type 23), and nothing else a plain save writes.
inline constexpr int k_valkey_first_version = 80;
inline constexpr int k_valkey_path_hash_version = 81;
inline constexpr int k_valkey_max_version = 81;
/// Version keyshift writes unless asked otherwise (loads in Valkey 7.2/8.x, Redis 7.2+).
inline constexpr int k_default_write_version = 11;
/// The checksum trailer exists from this version on.
inline constexpr int k_first_checksum_version = 5;

/// Object types: the byte before each key.
enum class Type : uint8_t {
  string = 0,
  list = 1,
  set = 2,
  zset = 3,  // scores as text
  hash = 4,
  zset_2 = 5,         // scores as binary doubles
  module_pre_ga = 6,  // cannot be skipped without the module
  module_2 = 7,       // self-describing module value
  hash_zipmap = 9,
  list_ziplist = 10,
  set_intset = 11,
  zset_ziplist = 12,
  hash_ziplist = 13,
  list_quicklist = 14,  // nodes are ziplists
  stream_listpacks = 15,
  hash_listpack = 16,
  zset_listpack = 17,
  list_quicklist_2 = 18,  // nodes are listpacks or plain elements
  stream_listpacks_2 = 19,
  set_listpack = 20,
  stream_listpacks_3 = 21,
  hash_metadata_pre_ga = 22,     // Redis 7.4 RC: field TTLs absolute
  hash_listpack_ex_pre_ga = 23,  // Redis 7.4 RC: listpack of field, value, TTL
  hash_metadata = 24,            // Redis 7.4: min expire, then TTLs relative to it
  hash_listpack_ex = 25,         // Redis 7.4: min expire, then listpack triplets
  // Valkey 9's RDB_TYPE_HASH_2, a hash whose fields may carry TTLs: on disk it is type 22
  // in "VALKEY" files, where Redis' 22-25 do not exist. Renumbered here so a neutral value
  // never mixes it up with Redis 7.4's pre-GA 22.
  valkey_hash_2 = 122,
  // Valkey 9.2's RDB_TYPE_PATH_HASH: type 23 in "VALKEY" files from version 81 on, where
  // Redis 7.4's pre-GA 23 does not exist. Renumbered for the same reason as HASH_2.
  valkey_path_hash = 123,
};

/// The byte Valkey 9 writes for its RDB_TYPE_HASH_2.
inline constexpr uint8_t k_valkey_hash_2_on_disk = 22;
/// The byte Valkey 9.2 writes for its RDB_TYPE_PATH_HASH.
inline constexpr uint8_t k_valkey_path_hash_on_disk = 23;

/// True for a byte that starts a key (an object type) rather than an opcode.
constexpr bool is_object_type(uint8_t t) {
  return t <= 7 || (t >= 9 && t <= 25);
}

/// Opcodes between keys.
enum class Opcode : uint8_t {
  update = 242,           // Valkey 9.2 forkless save: a write command replayed inline
  slot_import = 243,      // Valkey 9 cluster: an atomic slot migration being imported
  slot_info = 244,        // Redis 7.4 cluster: slot id, size, expires size
  function2 = 245,        // a function library's code
  function_pre_ga = 246,  // Redis 7.0 RC function format (refused, as Valkey does)
  module_aux = 247,
  idle = 248,  // LRU idle seconds of the next key
  freq = 249,  // LFU counter of the next key
  aux = 250,
  resizedb = 251,
  expiretime_ms = 252,
  expiretime = 253,
  selectdb = 254,
  eof = 255,
};

/// Top two bits of a length byte.
inline constexpr uint8_t k_len_6bit = 0;
inline constexpr uint8_t k_len_14bit = 1;
inline constexpr uint8_t k_len_32or64 = 2;
inline constexpr uint8_t k_len_encoded = 3;
inline constexpr uint8_t k_len_32bit = 0x80;
inline constexpr uint8_t k_len_64bit = 0x81;
/// Encodings of a string whose length byte has the top bits 11.
inline constexpr uint8_t k_enc_int8 = 0;
inline constexpr uint8_t k_enc_int16 = 1;
inline constexpr uint8_t k_enc_int32 = 2;
inline constexpr uint8_t k_enc_lzf = 3;

/// Quicklist 2 node containers.
inline constexpr uint64_t k_container_plain = 1;
inline constexpr uint64_t k_container_packed = 2;

/// Typed values inside module data (MODULE_2 values and module aux).
inline constexpr uint64_t k_module_op_eof = 0;
inline constexpr uint64_t k_module_op_sint = 1;
inline constexpr uint64_t k_module_op_uint = 2;
inline constexpr uint64_t k_module_op_float = 3;
inline constexpr uint64_t k_module_op_double = 4;
inline constexpr uint64_t k_module_op_string = 5;

/// Stream entry flags inside a node listpack.
inline constexpr int64_t k_stream_item_deleted = 1;
inline constexpr int64_t k_stream_item_samefields = 2;

/// The object type (rdb::Type, renumbered for Valkey's own types) that type byte `on_disk`
/// stands for in a file or DUMP payload of RDB `version`, or -1 when that version has no
/// such type. From 80 on the numbering is Valkey's: 22 is HASH_2, 23 is PATH_HASH (81 on),
/// and Redis 7.4's 22-25 do not exist.
constexpr int object_type_for_version(uint8_t on_disk, int version) {
  if (version >= k_valkey_first_version) {
    if (on_disk == k_valkey_hash_2_on_disk) {
      return static_cast<int>(Type::valkey_hash_2);
    }
    if (on_disk == k_valkey_path_hash_on_disk && version >= k_valkey_path_hash_version) {
      return static_cast<int>(Type::valkey_path_hash);
    }
    if (on_disk >= k_valkey_hash_2_on_disk) {
      return -1;
    }
  }
  return is_object_type(on_disk) ? on_disk : -1;
}

/// The name of an object type as Redis' rdb.c spells it ("HASH_LISTPACK"), or "UNKNOWN".
std::string_view type_name(uint8_t type);

}  // namespace keyshift::engine::rdb

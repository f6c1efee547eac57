#pragma once

#include "engine/persistence/rdb_value.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace keyshift::engine {

/// Why a file or payload could not be read: the byte offset and what was expected there.
struct RdbError {
  uint64_t offset = 0;
  std::string message;
};

/// A key as read, with the metadata that preceded it.
struct RdbKey {
  uint64_t db = 0;
  std::string key;
  RdbValue value;
  int64_t expire_ms = -1;     // absolute unix ms, -1 without a TTL
  int64_t idle_s = -1;        // LRU idle seconds, -1 when absent
  int freq = -1;              // LFU counter, -1 when absent
  uint64_t offset = 0;        // where the key's type byte is
  uint64_t value_bytes = 0;   // bytes the value took in the file
  uint64_t value_offset = 0;  // where the value starts (after the key name)
  /// The visitor asked for the value later (RdbVisitor::defer_value): `value` holds only
  /// its kind and type; decode_rdb_value() of the file's bytes at value_offset (value_bytes
  /// long, `base` value_offset) reads it when wanted.
  bool deferred = false;
};

/// Receives what read_rdb finds, in file order. Defaults ignore everything but keys.
class RdbVisitor {
 public:
  virtual ~RdbVisitor() = default;
  /// An AUX field (redis-ver, ctime, used-mem, ...).
  virtual void on_aux(std::string_view name, std::string_view value);
  /// SELECTDB: the keys that follow belong to `db`.
  virtual void on_select_db(uint64_t db);
  /// RESIZEDB hint for the current database.
  virtual void on_resize_db(uint64_t db_size, uint64_t expires_size);
  /// SLOT_INFO (Redis 7.4 cluster files).
  virtual void on_slot_info(uint64_t slot, uint64_t size, uint64_t expires_size);
  /// A function library (FUNCTION2): its source code.
  virtual void on_function(std::string_view code);
  /// Module aux data of module `name`, skipped.
  virtual void on_module_aux(std::string_view name);
  /// SLOT_IMPORT (Valkey 9 cluster files): a slot migration job being imported.
  virtual void on_slot_import(std::string_view job, uint64_t slot_ranges);
  /// Asked, when values are materialized, before a key's value of object type `type` is
  /// read: true has the reader only step over it (its blobs and LZF data unchecked) and
  /// hand on_key a deferred key, whose value another thread may decode later. Field-TTL
  /// hashes and module values are never deferred, nor streams unless keep_streams is off.
  virtual bool defer_value(uint8_t type);
  /// A key. Its value may be moved from. Return false to stop reading (not an error).
  virtual bool on_key(RdbKey& key) = 0;
};

/// How to read.
struct RdbReadOptions {
  /// Check the CRC64 trailer (a stored zero means the writer disabled it).
  bool verify_checksum = true;
  /// Skip module values (type 7) instead of failing; they are still reported to on_key
  /// as RdbKind::module with the module's name.
  bool skip_modules = false;
  /// False validates values as deeply without keeping their contents (rdb check and
  /// inspect): values then carry their kind and type only, except streams, hashes with
  /// field TTLs and module values, which are always decoded.
  bool materialize = true;
  /// With materialize: hash and set listpacks (types 16, 20), intsets (11) and the listpack
  /// nodes of quicklists (18) are kept as validated blocks (RdbValue::packed, intset) that
  /// the engine adopts as they are, instead of being expanded into items. A block whose
  /// members repeat is expanded as without this option.
  bool keep_blocks = false;
  /// Without materialize, files from this size on have their listpack, ziplist and intset
  /// blobs checked on a second thread while this one walks the structure; errors are the
  /// same either way (the first in file order).
  size_t parallel_check_min_bytes = size_t{4} << 20;
  /// Without materialize, false validates a stream node by node, keeping only its metadata
  /// and consumer groups (bounded memory for a big stream), and lets defer_value defer
  /// streams too.
  bool keep_streams = true;
  /// Called now and then inside big values (every few MB of a list's, set's, sorted set's,
  /// hash's or stream's elements) with the offset read up to, so that a reader of a mapped
  /// file can give back the pages behind it before the value ends.
  std::function<void(uint64_t offset)> passed;
};

/// What read_rdb saw of the file as a whole.
struct RdbSummary {
  int version = 0;
  bool valkey_magic = false;  // "VALKEY" and Valkey 9's numbering (version 80 or 81)
  uint64_t keys = 0;
  bool has_checksum = false;  // version >= 5
  uint64_t checksum = 0;      // as stored (0: disabled)
  bool checksum_verified = false;
  uint64_t end_offset = 0;  // just after the EOF opcode and checksum
  bool stopped = false;     // the visitor asked to stop
};

/// Reads a whole RDB file held in memory (versions 1..12, and Valkey 9's 80 and 81), calling
/// `visitor` for each element. Lengths are never trusted: anything that would run past the end,
/// overflow or contradict the format is an RdbError naming the offset.
Expected<RdbSummary, RdbError> read_rdb(std::string_view file, RdbVisitor& visitor,
                                        const RdbReadOptions& options = {});

/// Reads an RDB that arrives in pieces (a replication full sync), with the same decoder as
/// read_rdb: each feed() reads every whole top-level record the bytes so far hold, calls the
/// visitor for them, and keeps only the unread tail. A record bigger than what is buffered
/// waits (the buffer grows to hold it); running out of data is told apart from damage, which
/// is an RdbError at the same offset read_rdb would name. The CRC64 is computed as bytes
/// are read; options.parallel_check_min_bytes does not apply.
class RdbStreamReader {
 public:
  RdbStreamReader(RdbVisitor& visitor, const RdbReadOptions& options = {});
  ~RdbStreamReader();
  RdbStreamReader(const RdbStreamReader&) = delete;
  RdbStreamReader& operator=(const RdbStreamReader&) = delete;

  /// Takes the next `bytes`; true once the file's end (EOF opcode and checksum) was read
  /// or the visitor stopped (bytes after that are ignored).
  Expected<bool, RdbError> feed(std::string_view bytes);
  /// No more bytes will come: the summary, or an error when the file is incomplete.
  Expected<RdbSummary, RdbError> finish();
  /// True once the whole file was read.
  bool done() const;
  /// Bytes read so far (the offset of the first unread byte).
  uint64_t offset() const;
  /// Bytes held that no whole record has used yet.
  size_t buffered() const;
  /// What is known so far: the version once the header is read (0 before), keys read.
  const RdbSummary& summary() const;
  /// During a visitor call: the file's bytes [offset, offset + length) of the record being
  /// read (a deferred value's bytes: RdbKey::value_offset, value_bytes).
  std::string_view bytes_at(uint64_t offset, uint64_t length) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

/// Decodes one value of object type `type` (rdb::Type, Valkey's own types renumbered) that
/// fills `bytes` exactly; errors count offsets from `base` (where `bytes` start in a file,
/// so a deferred value fails as an immediate read would).
Expected<RdbValue, RdbError> decode_rdb_value(uint8_t type, std::string_view bytes,
                                              const RdbReadOptions& options = {},
                                              uint64_t base = 0);

/// Decodes the value of a DUMP payload of RDB `version` from `bytes`, everything after the
/// type byte (footer included, which Valkey's RESTORE also lets the value run into; what
/// follows the value is ignored). `on_disk` means what it means in that version (22 is
/// Valkey's HASH_2 from 80 on, Redis 7.4's pre-GA field-TTL hash below).
Expected<RdbValue, RdbError> decode_dump_value(uint8_t on_disk, int version, std::string_view bytes,
                                               const RdbReadOptions& options = {});

/// Reads one value of object type `type` (as decode_rdb_value takes it) a batch of elements
/// at a time, so a big key never sits whole in memory: a list's, set's, sorted set's or
/// hash's elements and a stream's entries come out in file order, each batch about
/// `max_bytes` of them (a quicklist or stream node is never split). The checks and errors
/// (offsets from `base`) are decode_rdb_value's. Values whose elements share one blob
/// (listpacks, ziplists, intsets, zipmaps: small by construction) and strings are decoded
/// whole and handed out in slices.
class RdbElementReader {
 public:
  RdbElementReader(uint8_t type, std::string_view bytes, uint64_t base = 0,
                   const RdbReadOptions& options = {});
  ~RdbElementReader();
  RdbElementReader(RdbElementReader&&) noexcept;
  RdbElementReader& operator=(RdbElementReader&&) noexcept;

  /// The value's kind.
  RdbKind kind() const { return m_kind; }
  /// Replaces `batch` with the next elements (items, zset, hash or stream.entries; a string
  /// or module value whole); true while more follow. A stream's deleted entries still in
  /// its nodes come too, flagged `deleted`, so that a writer can recreate pending entries
  /// that refer to them. A stream's consumer groups, length and
  /// IDs are in the last batch (the first, for a stream whose entries are one blob).
  Expected<bool, RdbError> next(RdbValue& batch, size_t max_bytes);
  /// A stream's length, IDs and consumer groups (no entries), read up front by a first
  /// pass a node at a time; nullptr for other kinds (or when that pass failed: next() says
  /// why).
  const RdbStream* stream_tail() const { return m_stream_tail.get(); }

 private:
  struct State;
  std::unique_ptr<State> m_state;
  std::unique_ptr<RdbStream> m_stream_tail;
  RdbKind m_kind = RdbKind::string;
};

/// The kind of value object type `type` (rdb::Type, renumbered as object_type_for_version
/// returns it) holds; module for the module types and anything unknown.
RdbKind kind_of_object_type(uint8_t type);

/// The kind's name as TYPE answers ("string", "hash", ...; "module", "pathhash").
std::string_view rdb_kind_name(RdbKind kind);

/// The module type name (9 characters) of a 64-bit module id; `version` gets its low 10 bits.
std::string module_type_name(uint64_t module_id, int* version = nullptr);

}  // namespace keyshift::engine

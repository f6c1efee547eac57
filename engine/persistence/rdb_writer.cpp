#include "engine/persistence/rdb_writer.hpp"

#include "engine/ds/listpack.hpp"
#include "engine/ds/lzf.hpp"
#include "engine/ds/quicklist.hpp"
#include "engine/engine.hpp"
#include "engine/keyspace/hash_value.hpp"
#include "engine/keyspace/list_value.hpp"
#include "engine/keyspace/set_value.hpp"
#include "engine/keyspace/stream_value.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/keyspace/zset_value.hpp"
#include "engine/persistence/crc64.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/util/atomic_file.hpp"
#include "engine/util/crash_point.hpp"
#include "engine/util/double_format.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>

namespace keyshift::engine {

namespace {

/// How a failed write of the RDB stream begins; save_rdb adds the temp file it went to.
constexpr std::string_view k_write_error = "write error: ";

using rdb::Type;

/// Appends RDB primitives to a byte string.
class Encoder {
 public:
  Encoder(std::string& out, bool compress) : m_out(out), m_compress(compress) {}

  void byte(uint8_t b) { m_out.push_back(static_cast<char>(b)); }
  void raw(std::string_view b) { m_out.append(b); }
  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      byte(static_cast<uint8_t>(v >> (8 * i)));
    }
  }
  void length(uint64_t len) {
    if (len < (1u << 6)) {
      byte(static_cast<uint8_t>(len));
    } else if (len < (1u << 14)) {
      byte(static_cast<uint8_t>(0x40 | (len >> 8)));
      byte(static_cast<uint8_t>(len & 0xFF));
    } else if (len <= UINT32_MAX) {
      byte(rdb::k_len_32bit);
      for (int i = 3; i >= 0; --i) {
        byte(static_cast<uint8_t>(len >> (8 * i)));
      }
    } else {
      byte(rdb::k_len_64bit);
      for (int i = 7; i >= 0; --i) {
        byte(static_cast<uint8_t>(len >> (8 * i)));
      }
    }
  }
  /// Valkey's rdbSaveRawString: int-encoded when the text is a canonical int32, LZF when
  /// enabled and it saves bytes, else verbatim.
  void string(std::string_view s) {
    int64_t v = 0;
    if (s.size() <= 11 && canonical_int(s, v) && integer(v)) {
      return;
    }
    if (m_compress && s.size() > 20 && lzf(s)) {
      return;
    }
    length(s.size());
    raw(s);
  }
  /// An integer as an encoded string when it fits 32 bits, else as text.
  void int_string(int64_t v) {
    if (!integer(v)) {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof buf, v);
      std::string_view text(buf, static_cast<size_t>(r.ptr - buf));
      length(text.size());
      raw(text);
    }
  }
  void binary_double(double d) {
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    le(bits, 8);
  }

 private:
  static bool canonical_int(std::string_view s, int64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
      return false;
    }
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string_view(buf, static_cast<size_t>(r.ptr - buf)) == s;
  }
  bool integer(int64_t v) {
    if (v >= INT8_MIN && v <= INT8_MAX) {
      byte(0xC0 | rdb::k_enc_int8);
      le(static_cast<uint64_t>(v), 1);
    } else if (v >= INT16_MIN && v <= INT16_MAX) {
      byte(0xC0 | rdb::k_enc_int16);
      le(static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      byte(0xC0 | rdb::k_enc_int32);
      le(static_cast<uint64_t>(v), 4);
    } else {
      return false;
    }
    return true;
  }
  bool lzf(std::string_view s) {
    // As Valkey: worth it only when at least 4 bytes are saved.
    std::string packed(s.size() - 4, '\0');
    size_t n = lzf_compress(s.data(), s.size(), packed.data(), packed.size());
    if (n == 0) {
      return false;
    }
    byte(0xC0 | rdb::k_enc_lzf);
    length(n);
    length(s.size());
    raw(std::string_view(packed.data(), n));
    return true;
  }

  std::string& m_out;
  bool m_compress;
};

std::string zset_listpack(const ZSetValue& z) {
  Listpack lp;
  z.for_each([&](std::string_view member, double score) {
    lp.append(member);
    long long as_int = 0;
    if (double_to_int_exact(score, as_int)) {
      lp.append(static_cast<int64_t>(as_int));
    } else {
      char text[k_double_text_max];
      lp.append(LpValue::of_str(std::string_view(text, format_double_reply(score, text))));
    }
  });
  return std::string(lp.data());
}

Expected<uint8_t, std::string> encode_hash(const HashValue& h, const RdbWriteOptions& o,
                                           Encoder& enc) {
  bool ttls = h.has_field_expires();
  if (ttls && o.version < 12) {
    return Unexpected{std::string("a hash with field TTLs needs RDB version 12")};
  }
  if (ttls && o.version >= rdb::k_valkey_first_version) {
    // Valkey 9's RDB_TYPE_HASH_2, as its rdbSaveObject writes a hash with volatile fields:
    // the field count, then field, value and the expire time as 8 bytes little-endian, -1
    // for a field without one.
    enc.length(h.size());
    h.for_each([&](const HashField& f) {
      enc.string(f.field);
      enc.string(f.value);
      enc.le(static_cast<uint64_t>(f.expire_ms == k_hash_no_expire ? -1 : f.expire_ms), 8);
    });
    return rdb::k_valkey_hash_2_on_disk;
  }
  if (h.encoding() != ObjEncoding::hashtable) {
    Listpack lp;
    int64_t min_expire = INT64_MAX;
    h.for_each([&](const HashField& f) {
      lp.append(f.field);
      lp.append(f.value);
      if (ttls) {
        bool has = f.expire_ms != k_hash_no_expire;
        lp.append(has ? f.expire_ms : int64_t{0});
        if (has) {
          min_expire = std::min(min_expire, f.expire_ms);
        }
      }
    });
    if (ttls) {
      enc.le(static_cast<uint64_t>(min_expire), 8);
      enc.string(lp.data());
      return static_cast<uint8_t>(Type::hash_listpack_ex);
    }
    enc.string(lp.data());
    return static_cast<uint8_t>(Type::hash_listpack);
  }
  if (ttls) {
    int64_t min_expire = INT64_MAX;
    h.for_each([&](const HashField& f) {
      if (f.expire_ms != k_hash_no_expire) {
        min_expire = std::min(min_expire, f.expire_ms);
      }
    });
    enc.le(static_cast<uint64_t>(min_expire), 8);
    enc.length(h.size());
    h.for_each([&](const HashField& f) {
      // Stored relative to the minimum, +1 so that 0 keeps meaning "no TTL".
      enc.length(f.expire_ms == k_hash_no_expire
                     ? 0
                     : static_cast<uint64_t>(f.expire_ms - min_expire) + 1);
      enc.string(f.field);
      enc.string(f.value);
    });
    return static_cast<uint8_t>(Type::hash_metadata);
  }
  enc.length(h.size());
  h.for_each([&](const HashField& f) {
    enc.string(f.field);
    enc.string(f.value);
  });
  return static_cast<uint8_t>(Type::hash);
}

uint8_t encode_list(const ListValue& l, Encoder& enc) {
  const Quicklist* ql = l.quicklist();
  if (ql == nullptr) {
    Listpack lp;
    l.for_each([&](const LpValue& v) { lp.append(v); });
    enc.length(1);
    enc.length(rdb::k_container_packed);
    enc.string(lp.data());
    return static_cast<uint8_t>(Type::list_quicklist_2);
  }
  enc.length(ql->node_count());
  std::string scratch;
  for (const Quicklist::Node* n = ql->head(); n != nullptr; n = n->next()) {
    enc.length(n->is_plain() ? rdb::k_container_plain : rdb::k_container_packed);
    enc.string(n->raw(scratch));
  }
  return static_cast<uint8_t>(Type::list_quicklist_2);
}

Expected<uint8_t, std::string> encode_set(const SetValue& s, const RdbWriteOptions& o,
                                          Encoder& enc) {
  if (s.encoding() == ObjEncoding::intset) {
    enc.string(s.intset().blob());
    return static_cast<uint8_t>(Type::set_intset);
  }
  if (s.encoding() == ObjEncoding::listpack && o.version >= 11) {
    Listpack lp;
    s.for_each([&](const SetMember& m) { lp.append(m.to_string()); });
    enc.string(lp.data());
    return static_cast<uint8_t>(Type::set_listpack);
  }
  enc.length(s.size());
  s.for_each([&](const SetMember& m) { enc.string(m.to_string()); });
  return static_cast<uint8_t>(Type::set);
}

uint8_t encode_zset(const ZSetValue& z, Encoder& enc) {
  if (z.encoding() != ObjEncoding::skiplist) {
    enc.string(zset_listpack(z));
    return static_cast<uint8_t>(Type::zset_listpack);
  }
  // Greatest first, as Valkey writes it: loading then inserts at the head cheaply.
  enc.length(z.size());
  z.for_each_reverse([&](std::string_view member, double score) {
    enc.string(member);
    enc.binary_double(score);
  });
  return static_cast<uint8_t>(Type::zset_2);
}

/// Buffered output to a file descriptor with a running CRC64.
class FileSink {
 public:
  explicit FileSink(int fd) : m_fd(fd) {}
  std::string& buffer() { return m_buf; }
  bool flush_if_large() { return m_buf.size() < (1u << 20) || flush(); }
  bool flush() {
    m_crc = crc64(m_crc, m_buf);
    size_t done = 0;
    while (done < m_buf.size()) {
      ssize_t n = counted_write(m_fd, m_buf.data() + done, m_buf.size() - done);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        return false;
      }
      done += static_cast<size_t>(n);
    }
    m_total += m_buf.size();
    m_buf.clear();
    return true;
  }
  uint64_t crc() const { return m_crc; }
  uint64_t total() const { return m_total + m_buf.size(); }

 private:
  int m_fd;
  std::string m_buf;
  uint64_t m_crc = 0;
  uint64_t m_total = 0;
};

}  // namespace

/// Valkey's rdbSaveObject for streams: the node listpacks as they are, the stream's metadata,
/// then each group with its PEL and consumers. Version 10 (Redis 7.0) has no consumer
/// active-time, so it gets type 19; later versions get type 21.
uint8_t encode_stream(const StreamValue& s, const RdbWriteOptions& o, Encoder& enc) {
  bool v3 = o.version >= 11;
  enc.length(s.nodes().size());
  for (const auto& [master, lp] : s.nodes()) {
    enc.string(master.encode());
    enc.string(lp.data());
  }
  enc.length(s.length());
  enc.length(s.last_id().ms);
  enc.length(s.last_id().seq);
  enc.length(s.first_id().ms);
  enc.length(s.first_id().seq);
  enc.length(s.max_deleted_id().ms);
  enc.length(s.max_deleted_id().seq);
  enc.length(s.entries_added());
  enc.length(s.groups().size());
  for (const auto& [name, g] : s.groups()) {
    enc.string(name);
    enc.length(g.last_id.ms);
    enc.length(g.last_id.seq);
    enc.length(static_cast<uint64_t>(g.entries_read));
    enc.length(g.pel.size());
    for (const auto& [id, nack] : g.pel) {
      enc.raw(id.encode());
      enc.le(static_cast<uint64_t>(nack.delivery_time_ms), 8);
      enc.length(nack.delivery_count);
    }
    enc.length(g.consumers.size());
    for (const auto& [cname, c] : g.consumers) {
      enc.string(cname);
      enc.le(static_cast<uint64_t>(c->seen_time_ms), 8);
      if (v3) {
        enc.le(static_cast<uint64_t>(c->active_time_ms), 8);
      }
      enc.length(c->pel.size());
      for (const auto& [id, nack] : c->pel) {
        enc.raw(id.encode());
      }
    }
  }
  return static_cast<uint8_t>(v3 ? Type::stream_listpacks_3 : Type::stream_listpacks_2);
}

Expected<uint8_t, std::string> encode_rdb_value(const Entry& e, const RdbWriteOptions& options,
                                                std::string& out) {
  Encoder enc(out, options.compress);
  switch (e.type()) {
    case ObjType::string: {
      if (e.kind() == Entry::Kind::integer) {
        enc.int_string(e.integer());
      } else {
        IntBuffer buf;
        enc.string(string_of(&e, buf));
      }
      return static_cast<uint8_t>(Type::string);
    }
    case ObjType::list:
      return encode_list(*static_cast<const ListValue*>(e.object()), enc);
    case ObjType::set:
      return encode_set(*SetRef(&e), options, enc);
    case ObjType::zset:
      return encode_zset(*ZSetRef(&e), enc);
    case ObjType::hash:
      return encode_hash(*HashRef(&e), options, enc);
    case ObjType::stream:
      return encode_stream(*static_cast<const StreamValue*>(e.object()), options, enc);
    default:
      break;
  }
  return Unexpected{std::string("this value type cannot be written")};
}

Expected<std::string, std::string> dump_payload(const Entry& e, const RdbWriteOptions& options) {
  std::string out;
  out.push_back('\0');
  auto type = encode_rdb_value(e, options, out);
  if (!type) {
    return Unexpected{type.error()};
  }
  out[0] = static_cast<char>(*type);
  Encoder enc(out, false);
  enc.le(static_cast<uint64_t>(options.version), 2);
  enc.le(crc64(0, out), 8);
  return out;
}

std::string dump_payload_of_encoded(uint8_t type, std::string_view encoded, int version) {
  std::string out;
  out.reserve(encoded.size() + 11);
  out.push_back(static_cast<char>(type));
  out.append(encoded);
  Encoder enc(out, false);
  enc.le(static_cast<uint64_t>(version), 2);
  enc.le(crc64(0, out), 8);
  return out;
}

std::string functions_dump_payload(std::span<const std::string> codes, bool compress) {
  std::string out;
  Encoder enc(out, compress);
  for (const std::string& code : codes) {
    enc.byte(static_cast<uint8_t>(rdb::Opcode::function2));
    enc.string(code);
  }
  enc.le(static_cast<uint64_t>(rdb::k_default_write_version), 2);
  enc.le(crc64(0, out), 8);
  return out;
}

bool dump_version_readable(int version) {
  // Valkey 8.0.1's verifyDumpPayload only refuses versions above its own (11), 0 included;
  // keyshift reads Redis 7.4's 12 and Valkey 9's own numbering as well, and nothing between.
  return (version >= 0 && version <= rdb::k_max_version) ||
         (version >= rdb::k_valkey_first_version && version <= rdb::k_valkey_max_version);
}

Expected<CheckedDumpPayload, std::string> check_dump_payload(std::string_view payload) {
  if (payload.size() < 10) {  // the version and the CRC64, as verifyDumpPayload requires
    return Unexpected{std::string("payload too short")};
  }
  size_t footer = payload.size() - 10;
  auto version = static_cast<int>(static_cast<uint8_t>(payload[footer]) |
                                  static_cast<uint8_t>(payload[footer + 1]) << 8);
  if (!dump_version_readable(version)) {
    return Unexpected{"payload RDB version " + std::to_string(version) +
                      " is not one keyshift reads"};
  }
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) {
    stored |= static_cast<uint64_t>(static_cast<uint8_t>(payload[footer + 2 + i])) << (8 * i);
  }
  if (crc64(0, payload.substr(0, footer + 2)) != stored) {
    return Unexpected{std::string("payload checksum mismatch")};
  }
  // Valkey reads the object from the payload's first byte on, footer included.
  return CheckedDumpPayload{static_cast<uint8_t>(payload[0]), version, payload.substr(1)};
}

Expected<RdbWriteStats, std::string> write_rdb(
    Engine& engine, int fd, const RdbWriteOptions& options,
    const std::vector<std::pair<std::string, std::string>>& aux) {
  bool valkey_9 = options.version >= rdb::k_valkey_first_version &&
                  options.version <= rdb::k_valkey_max_version;
  if (!valkey_9 && (options.version < 10 || options.version > rdb::k_max_version)) {
    return Unexpected{"cannot write RDB version " + std::to_string(options.version) +
                      " (10, 11, 12, 80 or 81)"};
  }
  auto fail = [](std::string why) -> Expected<RdbWriteStats, std::string> {
    return Unexpected{std::move(why)};
  };
  FileSink sink(fd);
  std::string& b = sink.buffer();
  Encoder enc(b, options.compress);
  char magic[16];
  // Valkey 9 writes "VALKEY" and three digits (rdbSaveRio).
  std::snprintf(magic, sizeof magic, valkey_9 ? "VALKEY%03d" : "REDIS%04d", options.version);
  enc.raw(magic);
  auto put_aux = [&](std::string_view k, std::string_view v) {
    enc.byte(static_cast<uint8_t>(rdb::Opcode::aux));
    enc.string(k);
    enc.string(v);
  };
  // 81 differs from 80 only by the Path Hash type, which the engine never holds: the
  // header and this field are what tells the two files apart.
  put_aux("valkey-ver", !valkey_9                                            ? "8.0.1"
                        : options.version >= rdb::k_valkey_path_hash_version ? "9.2.0"
                                                                             : "9.0.0");
  put_aux("redis-bits", "64");
  put_aux("ctime", std::to_string(engine.clock().now_ms() / 1000));
  put_aux("used-mem", std::to_string(engine.used_memory()));
  put_aux("aof-base", "0");
  for (const auto& [k, v] : aux) {
    put_aux(k, v);
  }
  for (const std::string& code : options.functions) {
    enc.byte(static_cast<uint8_t>(rdb::Opcode::function2));
    enc.string(code);
  }
  for (const auto& [name, lib] : engine.scripting().libraries()) {
    enc.byte(static_cast<uint8_t>(rdb::Opcode::function2));
    enc.string(lib.code);
  }
  RdbWriteStats stats;
  int64_t now = engine.clock().now_ms();
  for (int i = 0; i < engine.db_count(); ++i) {
    Db& db = engine.db(i);
    if (db.size() == 0) {
      continue;
    }
    enc.byte(static_cast<uint8_t>(rdb::Opcode::selectdb));
    enc.length(static_cast<uint64_t>(i));
    enc.byte(static_cast<uint8_t>(rdb::Opcode::resizedb));
    enc.length(db.size());
    enc.length(db.expires_size());
    std::string error;
    db.for_each([&](const Entry* e) {
      if (!error.empty() || (e->has_expire() && e->expire_ms() <= now)) {
        return;  // expired keys are not saved
      }
      size_t mark = b.size();
      if (e->has_expire()) {
        enc.byte(static_cast<uint8_t>(rdb::Opcode::expiretime_ms));
        enc.le(static_cast<uint64_t>(e->expire_ms()), 8);
      }
      size_t type_at = b.size();
      enc.byte(0);
      enc.string(e->key());
      auto type = encode_rdb_value(*e, options, b);
      if (!type) {
        b.resize(mark);
        error = "key '" + std::string(e->key()) + "': " + type.error();
        return;
      }
      b[type_at] = static_cast<char>(*type);
      ++stats.keys;
      if (!sink.flush_if_large()) {
        error = std::string(k_write_error) + std::strerror(errno);
      }
    });
    if (!error.empty()) {
      return fail(error);
    }
  }
  enc.byte(static_cast<uint8_t>(rdb::Opcode::eof));
  if (!sink.flush()) {
    return fail(std::string(k_write_error) + std::strerror(errno));
  }
  uint64_t crc = options.checksum ? sink.crc() : 0;
  enc.le(crc, 8);
  // The trailer is not part of the checksum; flush() folds it in, which no longer matters.
  if (!sink.flush()) {
    return fail(std::string(k_write_error) + std::strerror(errno));
  }
  stats.bytes = sink.total();
  return stats;
}

Expected<RdbWriteStats, std::string> save_rdb(
    Engine& engine, const std::string& path, const RdbWriteOptions& options,
    const std::vector<std::pair<std::string, std::string>>& aux) {
  auto file = AtomicFile::create(path, 0600);  // the dataset: its owner's only
  if (!file) {
    return Unexpected{"Failed opening the temp RDB file: " + file.error().message()};
  }
  auto stats = write_rdb(engine, file->fd(), options, aux);
  if (!stats) {
    // A failed write names the temp file (which the AtomicFile removes): a full disk shows
    // where; a refused value says what it is already.
    std::string_view why = stats.error();
    if (why.starts_with(k_write_error)) {
      why.remove_prefix(k_write_error.size());
      return Unexpected{"write error on " + file->temp_path() + ": " + std::string(why)};
    }
    return stats;
  }
  if (auto error = file->commit()) {
    return Unexpected{"Error saving the DB file: " + error->message()};
  }
  return stats;
}

}  // namespace keyshift::engine

#include "engine/persistence/rdb_reader.hpp"

#include "engine/ds/intset.hpp"
#include "engine/ds/listpack.hpp"
#include "engine/ds/lzf.hpp"
#include "engine/persistence/crc64.hpp"
#include "engine/persistence/rdb_format.hpp"
#include "engine/util/hash.hpp"
#include "engine/util/split_args.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>

namespace keyshift::engine {

namespace rdb {

std::string_view type_name(uint8_t type) {
  switch (static_cast<Type>(type)) {
    case Type::string:
      return "STRING";
    case Type::list:
      return "LIST";
    case Type::set:
      return "SET";
    case Type::zset:
      return "ZSET";
    case Type::hash:
      return "HASH";
    case Type::zset_2:
      return "ZSET_2";
    case Type::module_pre_ga:
      return "MODULE_PRE_GA";
    case Type::module_2:
      return "MODULE_2";
    case Type::hash_zipmap:
      return "HASH_ZIPMAP";
    case Type::list_ziplist:
      return "LIST_ZIPLIST";
    case Type::set_intset:
      return "SET_INTSET";
    case Type::zset_ziplist:
      return "ZSET_ZIPLIST";
    case Type::hash_ziplist:
      return "HASH_ZIPLIST";
    case Type::list_quicklist:
      return "LIST_QUICKLIST";
    case Type::stream_listpacks:
      return "STREAM_LISTPACKS";
    case Type::hash_listpack:
      return "HASH_LISTPACK";
    case Type::zset_listpack:
      return "ZSET_LISTPACK";
    case Type::list_quicklist_2:
      return "LIST_QUICKLIST_2";
    case Type::stream_listpacks_2:
      return "STREAM_LISTPACKS_2";
    case Type::set_listpack:
      return "SET_LISTPACK";
    case Type::stream_listpacks_3:
      return "STREAM_LISTPACKS_3";
    case Type::hash_metadata_pre_ga:
      return "HASH_METADATA_PRE_GA";
    case Type::hash_listpack_ex_pre_ga:
      return "HASH_LISTPACK_EX_PRE_GA";
    case Type::hash_metadata:
      return "HASH_METADATA";
    case Type::hash_listpack_ex:
      return "HASH_LISTPACK_EX";
    case Type::valkey_hash_2:
      return "HASH_2";
    case Type::valkey_path_hash:
      return "PATH_HASH";
  }
  return "UNKNOWN";
}

}  // namespace rdb

void RdbVisitor::on_aux(std::string_view, std::string_view) {}
void RdbVisitor::on_select_db(uint64_t) {}
void RdbVisitor::on_resize_db(uint64_t, uint64_t) {}
void RdbVisitor::on_slot_info(uint64_t, uint64_t, uint64_t) {}
void RdbVisitor::on_function(std::string_view) {}
void RdbVisitor::on_module_aux(std::string_view) {}
void RdbVisitor::on_slot_import(std::string_view, uint64_t) {}
bool RdbVisitor::defer_value(uint8_t) {
  return false;
}

std::string module_type_name(uint64_t module_id, int* version) {
  static constexpr std::string_view k_charset =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string name(9, ' ');
  uint64_t id = module_id >> 10;
  for (int i = 8; i >= 0; --i) {
    name[static_cast<size_t>(i)] = k_charset[id & 63];
    id >>= 6;
  }
  if (version != nullptr) {
    *version = static_cast<int>(module_id & 1023);
  }
  return name;
}

namespace {

using rdb::Type;

// Highest expansion LZF can reach (a 3-byte back reference yields 264 bytes): a declared
// length beyond it cannot be honest, so it is refused before anything is allocated.
constexpr uint64_t k_lzf_max_ratio = 100;

/// Bytes of a file or blob read front to back; the first error is kept with its offset.
class Cursor {
 public:
  Cursor(std::string_view data, uint64_t base, bool partial = false)
      : m_data(data), m_base(base), m_partial(partial) {}

  uint64_t offset() const { return m_base + m_pos; }
  size_t pos() const { return m_pos; }
  size_t remaining() const { return m_data.size() - m_pos; }
  bool failed() const { return m_error.has_value(); }
  const RdbError& error() const { return *m_error; }
  RdbError take_error() { return std::move(*m_error); }
  /// In partial mode (more data may follow `data`), true when the failure was running
  /// out of data rather than a fault in it; need() is then the offset the data must reach.
  bool short_of_data() const { return m_short; }
  uint64_t need() const { return m_need; }
  /// Moves back to `pos` (a record start) and forgets the failure.
  void rewind(size_t pos) {
    m_pos = pos;
    m_error.reset();
    m_short = false;
  }

  /// Records an error at the current offset (the first one wins); always false.
  bool fail(std::string message) { return fail_at(offset(), std::move(message)); }
  bool fail_at(uint64_t at, std::string message) {
    if (!m_error) {
      m_error = RdbError{at, std::move(message)};
    }
    return false;
  }

  bool bytes(size_t n, std::string_view& out, const char* what) {
    if (failed()) {
      return false;
    }
    if (n > remaining()) {
      if (m_partial) {
        m_short = true;
        m_need = offset() + n;
      }
      return fail("unexpected end of data reading " + std::string(what) + " (" + std::to_string(n) +
                  " bytes wanted, " + std::to_string(remaining()) + " left)");
    }
    out = m_data.substr(m_pos, n);
    m_pos += n;
    return true;
  }
  bool u8(uint8_t& out, const char* what) {
    std::string_view b;
    if (!bytes(1, b, what)) {
      return false;
    }
    out = static_cast<uint8_t>(b[0]);
    return true;
  }
  /// Little-endian unsigned integer of `n` bytes.
  bool uint_le(size_t n, uint64_t& out, const char* what) {
    std::string_view b;
    if (!bytes(n, b, what)) {
      return false;
    }
    out = 0;
    for (size_t i = 0; i < n; ++i) {
      out |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
    }
    return true;
  }
  bool uint_be(size_t n, uint64_t& out, const char* what) {
    std::string_view b;
    if (!bytes(n, b, what)) {
      return false;
    }
    out = 0;
    for (size_t i = 0; i < n; ++i) {
      out = (out << 8) | static_cast<uint8_t>(b[i]);
    }
    return true;
  }

  /// An RDB length; `encoded` (when given) is set for the special string encodings, whose
  /// kind is then returned in `out`.
  bool length(uint64_t& out, const char* what, bool* encoded = nullptr) {
    uint8_t b = 0;
    if (!u8(b, what)) {
      return false;
    }
    if (encoded != nullptr) {
      *encoded = false;
    }
    switch (b >> 6) {
      case rdb::k_len_6bit:
        out = b & 0x3F;
        return true;
      case rdb::k_len_14bit: {
        uint8_t lo = 0;
        if (!u8(lo, what)) {
          return false;
        }
        out = (static_cast<uint64_t>(b & 0x3F) << 8) | lo;
        return true;
      }
      case rdb::k_len_encoded:
        if (encoded == nullptr) {
          return fail_at(
              offset() - 1,
              std::string("an encoded value where a length was expected (") + what + ")");
        }
        *encoded = true;
        out = b & 0x3F;
        return true;
      default:
        if (b == rdb::k_len_32bit) {
          return uint_be(4, out, what);
        }
        if (b == rdb::k_len_64bit) {
          return uint_be(8, out, what);
        }
        return fail_at(offset() - 1,
                       "invalid length byte " + std::to_string(b) + " (" + what + ")");
    }
  }

  /// A count of things that each take at least `min_bytes` in what is left: a count
  /// larger than that is a corrupt or hostile length, refused before any allocation.
  bool count(uint64_t& out, const char* what, uint64_t min_bytes = 1) {
    if (!length(out, what)) {
      return false;
    }
    if (min_bytes > 0 && out > remaining() / min_bytes) {
      if (m_partial) {
        m_short = true;
        m_need =
            out > (UINT64_MAX - offset()) / min_bytes ? UINT64_MAX : offset() + out * min_bytes;
      }
      return fail("implausible count " + std::to_string(out) + " of " + what + " (only " +
                  std::to_string(remaining()) + " bytes left)");
    }
    return true;
  }

  /// An RDB string: raw, int-encoded or LZF-compressed.
  bool string(std::string& out, const char* what) {
    std::string_view v;
    if (!string_view(v, out, what)) {
      return false;
    }
    if (v.data() != out.data()) {
      out.assign(v);
    }
    return true;
  }

  /// An RDB string as a view: into the data for a raw string (no copy), else into
  /// `scratch`, which int-encoded and LZF strings are decoded into.
  bool string_view(std::string_view& out, std::string& scratch, const char* what) {
    bool encoded = false;
    uint64_t len = 0;
    uint64_t start = offset();
    if (!length(len, what, &encoded)) {
      return false;
    }
    if (!encoded) {
      return bytes(len, out, what);
    }
    uint64_t v = 0;
    switch (len) {
      case rdb::k_enc_int8:
        if (!uint_le(1, v, what)) {
          return false;
        }
        scratch = std::to_string(static_cast<int8_t>(v));
        break;
      case rdb::k_enc_int16:
        if (!uint_le(2, v, what)) {
          return false;
        }
        scratch = std::to_string(static_cast<int16_t>(v));
        break;
      case rdb::k_enc_int32:
        if (!uint_le(4, v, what)) {
          return false;
        }
        scratch = std::to_string(static_cast<int32_t>(v));
        break;
      case rdb::k_enc_lzf:
        if (!lzf_string(scratch, what)) {
          return false;
        }
        break;
      default:
        return fail_at(start, "unknown string encoding " + std::to_string(len) + " (" + what + ")");
    }
    out = scratch;
    return true;
  }

  /// Steps over an RDB string by its lengths alone: an LZF stream is not looked into.
  bool skip_raw_string(const char* what) {
    bool encoded = false;
    uint64_t len = 0;
    size_t start = m_pos;
    if (!length(len, what, &encoded)) {
      return false;
    }
    std::string_view unused;
    if (!encoded) {
      return bytes(len, unused, what);
    }
    if (len == rdb::k_enc_lzf) {
      // The header checks of lzf_string, so that errors are the same either way.
      uint64_t clen = 0;
      uint64_t plain = 0;
      if (!length(clen, what) || !length(plain, what)) {
        return false;
      }
      if (plain > clen * k_lzf_max_ratio + 16) {
        return fail("LZF length " + std::to_string(plain) + " cannot come from " +
                    std::to_string(clen) + " compressed bytes (" + what + ")");
      }
      return bytes(clen, unused, what);
    }
    m_pos = start;
    std::string scratch;
    return string_view(unused, scratch, what);
  }

  /// Checks an RDB string without producing it (values that are only validated): an LZF
  /// stream is walked for its length, not decompressed.
  bool skip_string(std::string& scratch, const char* what) {
    bool encoded = false;
    uint64_t len = 0;
    size_t start = m_pos;
    if (!length(len, what, &encoded)) {
      return false;
    }
    if (!encoded || len != rdb::k_enc_lzf) {
      m_pos = start;
      std::string_view unused;
      return string_view(unused, scratch, what);
    }
    return lzf_string(scratch, what, true);
  }

  /// A double stored as text with a one-byte length (type 3 scores); 253..255 are nan,
  /// +inf and -inf.
  bool text_double(double& out, const char* what) {
    uint8_t len = 0;
    if (!u8(len, what)) {
      return false;
    }
    if (len == 253) {
      out = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    if (len == 254) {
      out = std::numeric_limits<double>::infinity();
      return true;
    }
    if (len == 255) {
      out = -std::numeric_limits<double>::infinity();
      return true;
    }
    std::string_view b;
    if (!bytes(len, b, what)) {
      return false;
    }
    std::string text(b);
    char* end = nullptr;
    out = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size()) {
      return fail_at(offset() - len, "invalid score '" + text + "' (" + what + ")");
    }
    return true;
  }
  bool binary_double(double& out, const char* what) {
    uint64_t bits = 0;
    if (!uint_le(8, bits, what)) {
      return false;
    }
    std::memcpy(&out, &bits, sizeof out);
    return true;
  }

 private:
  bool lzf_string(std::string& out, const char* what, bool validate_only = false) {
    uint64_t clen = 0;
    uint64_t len = 0;
    if (!length(clen, what) || !length(len, what)) {
      return false;
    }
    uint64_t at = offset();
    if (len > clen * k_lzf_max_ratio + 16) {
      return fail("LZF length " + std::to_string(len) + " cannot come from " +
                  std::to_string(clen) + " compressed bytes (" + what + ")");
    }
    std::string_view packed;
    if (!bytes(clen, packed, what)) {
      return false;
    }
    if (len == 0 && packed.empty()) {
      out.clear();
      return true;
    }
    if (validate_only) {
      if (len == 0 || lzf_decompressed_size(packed.data(), packed.size(), len) != len) {
        return fail_at(at, std::string("corrupt LZF data (") + what + ")");
      }
      return true;
    }
    out.resize(len);  // reused across strings by callers that pass a scratch buffer
    if (len == 0 || lzf_decompress(packed.data(), packed.size(), out.data(), len) != len) {
      return fail_at(at, std::string("corrupt LZF data (") + what + ")");
    }
    return true;
  }

  std::string_view m_data;
  uint64_t m_base = 0;
  size_t m_pos = 0;
  std::optional<RdbError> m_error;
  bool m_partial = false;
  bool m_short = false;
  uint64_t m_need = 0;
};

std::string lp_text(const LpValue& v) {
  return v.is_int() ? std::to_string(v.integer()) : std::string(v.str());
}

bool text_to_i64(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool text_to_score(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && !std::isnan(out);
}

/// True when two of the listpack's elements at positions 0, stride, 2*stride, ... have the
/// same text (a set's members, a hash's fields): such a block is not adopted as it is.
bool has_repeats(const Listpack& lp, size_t stride) {
  size_t count = (lp.size() + stride - 1) / stride;
  // Up to this many elements (a listpack within Valkey's default limits) the texts live on
  // the stack and go into an open-addressing set: one pass, where sorting compared each
  // text log n times. Bigger ones are sorted, so a crafted file cannot make the hashed
  // check quadratic.
  constexpr size_t k_inline = 256;
  constexpr size_t k_digits = 21;  // an int64 in decimal
  std::array<std::string_view, k_inline> small_texts;
  std::array<char, k_inline * k_digits> small_digits;
  std::vector<std::string_view> big_texts;
  std::string big_digits;
  bool small = count <= k_inline;
  if (!small) {
    big_texts.reserve(count);
    big_digits.reserve(count * k_digits);  // never reallocates: views into it stay valid
  }
  size_t n = 0;
  size_t i = 0;
  for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(p), ++i) {
    if (i % stride != 0) {
      continue;
    }
    LpValue e = lp.get(p);
    std::string_view t = e.str();
    if (e.is_int()) {
      char buf[24];
      std::string_view printed = e.view(buf);
      if (small) {
        char* to = small_digits.data() + n * k_digits;
        std::memcpy(to, printed.data(), printed.size());
        t = std::string_view(to, printed.size());
      } else {
        size_t at = big_digits.size();
        big_digits.append(printed);
        t = std::string_view(big_digits.data() + at, printed.size());
      }
    }
    if (small) {
      small_texts[n] = t;
    } else {
      big_texts.push_back(t);
    }
    ++n;
  }
  if (!small) {
    std::sort(big_texts.begin(), big_texts.end());
    return std::adjacent_find(big_texts.begin(), big_texts.end()) != big_texts.end();
  }
  constexpr uint16_t k_empty = 0xFFFF;
  std::array<uint16_t, 2 * k_inline> table;
  size_t slots = 16;
  while (slots < 2 * n) {
    slots *= 2;
  }
  std::fill_n(table.begin(), slots, k_empty);
  for (size_t k = 0; k < n; ++k) {
    size_t at = hash_bytes(small_texts[k], 0) & (slots - 1);
    while (table[at] != k_empty) {
      if (small_texts[table[at]] == small_texts[k]) {
        return true;
      }
      at = (at + 1) & (slots - 1);
    }
    table[at] = static_cast<uint16_t>(k);
  }
  return false;
}

/// Skips self-describing module data up to its EOF opcode.
bool skip_module_data(Cursor& c, const char* what) {
  for (;;) {
    uint64_t op = 0;
    if (!c.length(op, what)) {
      return false;
    }
    std::string s;
    std::string_view b;
    uint64_t n = 0;
    switch (op) {
      case rdb::k_module_op_eof:
        return true;
      case rdb::k_module_op_sint:
      case rdb::k_module_op_uint:
        if (!c.length(n, what)) {
          return false;
        }
        break;
      case rdb::k_module_op_float:
        if (!c.bytes(4, b, what)) {
          return false;
        }
        break;
      case rdb::k_module_op_double:
        if (!c.bytes(8, b, what)) {
          return false;
        }
        break;
      case rdb::k_module_op_string:
        if (!c.string(s, what)) {
          return false;
        }
        break;
      default:
        return c.fail("unknown module data opcode " + std::to_string(op) + " (" + what + ")");
    }
  }
}

/// A listpack, ziplist or intset blob whose validation a validate-only read hands to another
/// thread (see BlobChecker): what kind it is and where its string starts.
enum class BlobKind : uint8_t {
  set_listpack,
  set_intset,
  list_ziplist,
  zset_listpack,
  zset_ziplist,
  hash_listpack,
  hash_ziplist,
  node_listpack,
  node_ziplist,
};

struct BlobTask {
  uint64_t at = 0;
  BlobKind kind = BlobKind::set_listpack;
};

/// What the decoder calls a blob of `kind` in its errors.
const char* blob_what(BlobKind kind) {
  switch (kind) {
    case BlobKind::set_listpack:
      return "set listpack";
    case BlobKind::set_intset:
      return "intset";
    case BlobKind::list_ziplist:
      return "list ziplist";
    case BlobKind::zset_listpack:
      return "zset listpack";
    case BlobKind::zset_ziplist:
      return "zset ziplist";
    case BlobKind::hash_listpack:
      return "hash listpack";
    case BlobKind::hash_ziplist:
      return "hash ziplist";
    case BlobKind::node_listpack:
    case BlobKind::node_ziplist:
      return "quicklist node";
  }
  return "blob";
}

/// Where a walk through a stream's nodes stands (IDs must ascend across nodes).
struct StreamWalk {
  RdbStreamId prev_master;
  RdbStreamId prev_id;
  RdbStreamId first_id;  // of the first live entry
  uint64_t nodes = 0;    // nodes read so far
  uint64_t live = 0;     // live entries read so far
  bool keep_nodes = true;
  bool keep_deleted = false;  // deleted entries go to s.entries too, flagged
};

/// Where an element-wise read of one value stands (RdbElementReader).
struct ElementWalk {
  uint8_t type = 0;
  uint64_t left = 0;  // elements, quicklist nodes or stream nodes still to read
  uint64_t min_expire = 0;
  StreamWalk stream;
};

/// Decodes one value; `c` is positioned after the type byte.
class ValueDecoder {
 public:
  /// With `offload`, a validate-only decode leaves blobs to be checked elsewhere: their
  /// strings are only skipped here and each is added to `offload`.
  /// `skim` (validate-only, with `offload`) also steps over string values unchecked: a
  /// deferred value is read in full later.
  ValueDecoder(Cursor& c, const RdbReadOptions& options, std::vector<BlobTask>* offload = nullptr,
               bool skim = false)
      : m_c(c),
        m_options(options),
        m_keep(options.materialize),
        m_blocks(options.materialize && options.keep_blocks),
        m_skim(skim && !options.materialize),
        m_offload(options.materialize ? nullptr : offload) {}

  /// True for the object types a validate-only read decodes anyway (streams, field-TTL
  /// hashes, module values): never worth deferring.
  static bool is_stream(uint8_t type) {
    return type == static_cast<uint8_t>(Type::stream_listpacks) ||
           type == static_cast<uint8_t>(Type::stream_listpacks_2) ||
           type == static_cast<uint8_t>(Type::stream_listpacks_3);
  }

  /// always_kept, but for a stream read with RdbReadOptions::keep_streams off: that one is
  /// validated a node at a time, and can be deferred.
  static bool kept_whole(uint8_t type, const RdbReadOptions& options) {
    return always_kept(type) && (options.keep_streams || !is_stream(type));
  }

  static bool always_kept(uint8_t type) {
    return type == static_cast<uint8_t>(Type::stream_listpacks) ||
           type == static_cast<uint8_t>(Type::stream_listpacks_2) ||
           type == static_cast<uint8_t>(Type::stream_listpacks_3) ||
           (type >= static_cast<uint8_t>(Type::hash_metadata_pre_ga) &&
            type <= static_cast<uint8_t>(Type::hash_listpack_ex)) ||
           type == static_cast<uint8_t>(Type::valkey_hash_2) ||
           type == static_cast<uint8_t>(Type::valkey_path_hash) ||
           type == static_cast<uint8_t>(Type::module_2);
  }

  /// Validates the blob whose string starts at the cursor, exactly as decode() would have:
  /// same checks, same errors and offsets (the other side of `offload`).
  bool check_blob(BlobKind kind) {
    m_keep = false;
    RdbValue v;
    std::vector<std::string> none;
    switch (kind) {
      case BlobKind::set_listpack:
        return listpack_blob(none, "set listpack");
      case BlobKind::set_intset:
        return intset_blob(v);
      case BlobKind::list_ziplist:
        return ziplist_blob(none, "list ziplist");
      case BlobKind::zset_listpack:
      case BlobKind::zset_ziplist:
        return pairs_zset(kind == BlobKind::zset_listpack, v);
      case BlobKind::hash_listpack:
      case BlobKind::hash_ziplist:
        return pairs_hash(kind == BlobKind::hash_listpack, v);
      case BlobKind::node_listpack:
      case BlobKind::node_ziplist: {
        std::string_view bytes;
        uint64_t at = 0;
        if (!blob(bytes, at, "quicklist node")) {
          return false;
        }
        if (bytes.empty()) {
          return m_c.fail_at(at, "empty quicklist node");
        }
        return kind == BlobKind::node_listpack ? listpack_items(bytes, at, none, "quicklist node")
                                               : ziplist_items(bytes, at, none, "quicklist node");
      }
    }
    return false;
  }

  /// True for the types read element by element (RdbElementReader); the others, whose
  /// elements sit in one blob, are decoded whole.
  static bool walks_elements(uint8_t type) {
    switch (static_cast<Type>(type)) {
      case Type::list:
      case Type::set:
      case Type::zset:
      case Type::zset_2:
      case Type::hash:
      case Type::list_quicklist:
      case Type::list_quicklist_2:
      case Type::hash_metadata_pre_ga:
      case Type::hash_metadata:
      case Type::stream_listpacks:
      case Type::stream_listpacks_2:
      case Type::stream_listpacks_3:
        return true;
      default:
        return false;
    }
  }

  /// Reads what precedes a walked value's elements (its count, a hash's min expire).
  bool walk_begin(uint8_t type, ElementWalk& w, RdbValue& v) {
    v = RdbValue{};
    v.rdb_type = type;
    v.kind = kind_of_object_type(type);
    w = ElementWalk{};
    w.type = type;
    w.stream.keep_nodes = false;
    w.stream.keep_deleted = true;
    m_keep = true;
    switch (static_cast<Type>(type)) {
      case Type::list:
        return m_c.count(w.left, "list element");
      case Type::set:
        return m_c.count(w.left, "set member");
      case Type::zset:
      case Type::zset_2:
        return m_c.count(w.left, "zset members", 2);
      case Type::hash:
        return m_c.count(w.left, "hash fields", 2);
      case Type::list_quicklist:
      case Type::list_quicklist_2:
        return m_c.count(w.left, "quicklist nodes");
      case Type::hash_metadata_pre_ga:
      case Type::hash_metadata:
        if (type == static_cast<uint8_t>(Type::hash_metadata) &&
            !m_c.uint_le(8, w.min_expire, "hash min expire")) {
          return false;
        }
        return m_c.count(w.left, "hash fields", 3);
      default:
        // A stream without nodes still has its tail (length, IDs, groups).
        return m_c.count(w.left, "stream nodes", 2) &&
               (w.left > 0 || stream_tail(type, w.stream, v.stream));
    }
  }

  /// Appends the next element (a quicklist's or stream's next node) to `v`; `bytes` grows by
  /// about what it holds. After the last, a stream's tail is read into v.stream.
  bool walk_next(ElementWalk& w, RdbValue& v, size_t& bytes) {
    size_t at = m_c.pos();
    switch (static_cast<Type>(w.type)) {
      case Type::list:
      case Type::set:
        v.items.emplace_back();
        if (!m_c.string(v.items.back(), w.type == 1 ? "list element" : "set member")) {
          return false;
        }
        break;
      case Type::zset:
      case Type::zset_2: {
        auto& [member, score] = v.zset.emplace_back();
        bool ok = m_c.string(member, "zset member") && (w.type == static_cast<uint8_t>(Type::zset_2)
                                                            ? m_c.binary_double(score, "zset score")
                                                            : m_c.text_double(score, "zset score"));
        if (!ok) {
          return false;
        }
        if (std::isnan(score)) {
          return m_c.fail("zset score is NaN");
        }
        break;
      }
      case Type::hash: {
        RdbHashField& f = v.hash.emplace_back();
        if (!m_c.string(f.field, "hash field") || !m_c.string(f.value, "hash value")) {
          return false;
        }
        break;
      }
      case Type::list_quicklist:
      case Type::list_quicklist_2:
        if (!quicklist_node(w.type == static_cast<uint8_t>(Type::list_quicklist_2), v)) {
          return false;
        }
        break;
      case Type::hash_metadata_pre_ga:
      case Type::hash_metadata:
        if (!metadata_field(w.type == static_cast<uint8_t>(Type::hash_metadata), w.min_expire,
                            v.hash.emplace_back())) {
          return false;
        }
        break;
      default:
        if (!stream_node(w.stream, v.stream)) {
          return false;
        }
        break;
    }
    bytes += m_c.pos() - at + 16;
    --w.left;
    note_progress();
    if (w.left == 0 && v.kind == RdbKind::stream) {
      return stream_tail(w.type, w.stream, v.stream);
    }
    return true;
  }

  bool decode(uint8_t type, RdbValue& v) {
    v = RdbValue{};
    v.rdb_type = type;
    // Streams, field-TTL hashes and module values are rare and what reports look into:
    // always kept.
    m_keep = m_options.materialize || always_kept(type);
    // A stream read without keeping it is still walked with its entries decoded (their
    // checks need them), one node at a time, each node's entries dropped after it.
    m_light_stream = !m_options.materialize && !m_options.keep_streams && is_stream(type);
    switch (static_cast<Type>(type)) {
      case Type::string:
        v.kind = RdbKind::string;
        if (!m_keep) {
          return m_skim ? m_c.skip_raw_string("string value")
                        : m_c.skip_string(m_scratch, "string value");
        }
        return m_c.string(v.str, "string value");
      case Type::list:
        v.kind = RdbKind::list;
        return string_list(v.items, "list element");
      case Type::set:
        v.kind = RdbKind::set;
        return string_list(v.items, "set member");
      case Type::zset:
      case Type::zset_2:
        v.kind = RdbKind::zset;
        return plain_zset(type == static_cast<uint8_t>(Type::zset_2), v);
      case Type::hash:
        v.kind = RdbKind::hash;
        return plain_hash(v);
      case Type::hash_zipmap:
        v.kind = RdbKind::hash;
        return zipmap_hash(v);
      case Type::list_ziplist:
        v.kind = RdbKind::list;
        if (offloading()) {
          return offload(BlobKind::list_ziplist);
        }
        return ziplist_blob(v.items, "list ziplist");
      case Type::set_intset:
        v.kind = RdbKind::set;
        if (offloading()) {
          return offload(BlobKind::set_intset);
        }
        return intset_blob(v);
      case Type::zset_ziplist:
      case Type::zset_listpack:
        v.kind = RdbKind::zset;
        if (m_blocks && type == static_cast<uint8_t>(Type::zset_listpack)) {
          return block_zset(v);
        }
        if (offloading()) {
          return offload(type == static_cast<uint8_t>(Type::zset_listpack)
                             ? BlobKind::zset_listpack
                             : BlobKind::zset_ziplist);
        }
        return pairs_zset(type == static_cast<uint8_t>(Type::zset_listpack), v);
      case Type::hash_ziplist:
      case Type::hash_listpack:
        v.kind = RdbKind::hash;
        if (m_blocks && type == static_cast<uint8_t>(Type::hash_listpack)) {
          return block_listpack(v, 2, "hash listpack");
        }
        if (offloading()) {
          return offload(type == static_cast<uint8_t>(Type::hash_listpack)
                             ? BlobKind::hash_listpack
                             : BlobKind::hash_ziplist);
        }
        return pairs_hash(type == static_cast<uint8_t>(Type::hash_listpack), v);
      case Type::list_quicklist:
      case Type::list_quicklist_2:
        v.kind = RdbKind::list;
        return quicklist(type == static_cast<uint8_t>(Type::list_quicklist_2), v);
      case Type::set_listpack:
        v.kind = RdbKind::set;
        if (m_blocks) {
          return block_listpack(v, 1, "set listpack");
        }
        if (offloading()) {
          return offload(BlobKind::set_listpack);
        }
        return listpack_blob(v.items, "set listpack");
      case Type::stream_listpacks:
      case Type::stream_listpacks_2:
      case Type::stream_listpacks_3:
        v.kind = RdbKind::stream;
        return stream(type, v.stream);
      case Type::hash_metadata_pre_ga:
      case Type::hash_metadata:
        v.kind = RdbKind::hash;
        return metadata_hash(type == static_cast<uint8_t>(Type::hash_metadata), v);
      case Type::hash_listpack_ex_pre_ga:
      case Type::hash_listpack_ex:
        v.kind = RdbKind::hash;
        return listpack_ex_hash(type == static_cast<uint8_t>(Type::hash_listpack_ex), v);
      case Type::valkey_hash_2:
        v.kind = RdbKind::hash;
        return valkey_hash_2(v);
      case Type::valkey_path_hash:
        v.kind = RdbKind::path_hash;
        return path_hash(v);
      case Type::module_2:
        v.kind = RdbKind::module;
        return module_value(v);
      case Type::module_pre_ga:
        return m_c.fail(
            "module value of the pre-GA format (type 6) cannot be read without "
            "its module");
    }
    return m_c.fail("unknown value type " + std::to_string(type));
  }

 private:
  bool string_list(std::vector<std::string>& out, const char* what) {
    uint64_t n = 0;
    if (!m_c.count(n, what)) {
      return false;
    }
    if (!m_keep) {
      for (uint64_t i = 0; i < n; ++i) {
        if (!m_c.skip_string(m_scratch, what)) {
          return false;
        }
        note_progress();
      }
      return true;
    }
    out.resize(n);
    for (auto& s : out) {
      if (!m_c.string(s, what)) {
        return false;
      }
      note_progress();
    }
    return true;
  }

  bool plain_zset(bool binary, RdbValue& v) {
    uint64_t n = 0;
    if (!m_c.count(n, "zset members", 2)) {
      return false;
    }
    v.zset.resize(m_keep ? n : 0);
    for (uint64_t i = 0; i < n; ++i) {
      double local = 0;
      std::string* member_out = m_keep ? &v.zset[i].first : nullptr;
      double& score = m_keep ? v.zset[i].second : local;
      bool ok =
          (m_keep ? m_c.string(*member_out, "zset member")
                  : m_c.skip_string(m_scratch, "zset member")) &&
          (binary ? m_c.binary_double(score, "zset score") : m_c.text_double(score, "zset score"));
      if (!ok) {
        return false;
      }
      if (std::isnan(score)) {
        return m_c.fail("zset score is NaN");
      }
      note_progress();
    }
    return true;
  }

  bool plain_hash(RdbValue& v) {
    uint64_t n = 0;
    if (!m_c.count(n, "hash fields", 2)) {
      return false;
    }
    if (!m_keep) {
      for (uint64_t i = 0; i < 2 * n; ++i) {
        if (!m_c.skip_string(m_scratch, i % 2 == 0 ? "hash field" : "hash value")) {
          return false;
        }
        note_progress();
      }
      return true;
    }
    v.hash.resize(n);
    for (auto& f : v.hash) {
      if (!m_c.string(f.field, "hash field") || !m_c.string(f.value, "hash value")) {
        return false;
      }
      note_progress();
    }
    return true;
  }

  /// True when this value's blobs are left to the other thread.
  bool offloading() const { return m_offload != nullptr && !m_keep; }

  /// Skips the blob's string (its LZF stream unchecked: the other side decompresses it) and
  /// records it for checking.
  bool offload(BlobKind kind) {
    uint64_t at = m_c.offset();
    if (!m_c.skip_raw_string(blob_what(kind))) {
      return false;
    }
    m_offload->push_back({at, kind});
    return true;
  }

  /// Reads a string holding a serialized blob, remembering its file offset.
  bool blob(std::string_view& out, uint64_t& at, const char* what) {
    at = m_c.offset();
    return m_c.string_view(out, m_blob_scratch, what);
  }

  bool listpack_items(std::string_view bytes, uint64_t at, std::vector<std::string>& out,
                      const char* what) {
    LpCheck check;
    if (!m_keep) {
      check = validate_listpack(bytes, true);
      if (!check.ok) {
        return m_c.fail_at(at, std::string(what) + ": invalid listpack (" + check.problem +
                                   " at blob byte " + std::to_string(check.offset) + ")");
      }
      m_validated_count = check.count;
      return true;
    }
    Listpack lp;
    if (!Listpack::adopt(bytes, lp, &check)) {
      return m_c.fail_at(at, std::string(what) + ": invalid listpack (" + check.problem +
                                 " at blob byte " + std::to_string(check.offset) + ")");
    }
    out.reserve(out.size() + lp.size());
    for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(p)) {
      out.push_back(lp_text(lp.get(p)));
    }
    return true;
  }

  /// Validates a listpack blob and copies it into `out` as a block.
  bool adopt_listpack(std::string_view bytes, uint64_t at, Listpack& out, const char* what) {
    LpCheck check;
    if (!Listpack::adopt(bytes, out, &check)) {
      return m_c.fail_at(at, std::string(what) + ": invalid listpack (" + check.problem +
                                 " at blob byte " + std::to_string(check.offset) + ")");
    }
    return true;
  }

  /// A set (stride 1) or hash (stride 2: field/value pairs) listpack kept as a block
  /// (keep_blocks); expanded into items or fields instead when members or fields repeat, so
  /// that building the value drops the repeats as it always did.
  bool block_listpack(RdbValue& v, size_t stride, const char* what) {
    std::string_view bytes;
    uint64_t at = 0;
    Listpack lp;
    if (!blob(bytes, at, what) || !adopt_listpack(bytes, at, lp, what)) {
      return false;
    }
    if (lp.size() % stride != 0) {
      return m_c.fail_at(at, std::string(what) + ": odd number of elements");
    }
    if (!has_repeats(lp, stride)) {
      v.packed.push_back(std::move(lp));
      return true;
    }
    for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(p)) {
      if (stride == 1) {
        v.items.push_back(lp_text(lp.get(p)));
        continue;
      }
      RdbHashField f;
      f.field = lp_text(lp.get(p));
      p = lp.next(p);
      f.value = lp_text(lp.get(p));
      v.hash.push_back(std::move(f));
    }
    return true;
  }

  bool listpack_blob(std::vector<std::string>& out, const char* what) {
    std::string_view bytes;
    uint64_t at = 0;
    return blob(bytes, at, what) && listpack_items(bytes, at, out, what);
  }

  bool ziplist_items(std::string_view z, uint64_t at, std::vector<std::string>& out,
                     const char* what) {
    auto bad = [&](size_t pos, const std::string& why) {
      return m_c.fail_at(at, std::string(what) + ": invalid ziplist (" + why + " at blob byte " +
                                 std::to_string(pos) + ")");
    };
    const auto* p = reinterpret_cast<const uint8_t*>(z.data());
    size_t size = z.size();
    if (size < 11) {
      return bad(0, "too short");
    }
    auto le32 = [&](size_t i) {
      return static_cast<uint32_t>(p[i]) | static_cast<uint32_t>(p[i + 1]) << 8 |
             static_cast<uint32_t>(p[i + 2]) << 16 | static_cast<uint32_t>(p[i + 3]) << 24;
    };
    if (le32(0) != size) {
      return bad(0, "header size " + std::to_string(le32(0)) + " differs from the blob's");
    }
    if (p[size - 1] != 0xFF) {
      return bad(size - 1, "no terminator");
    }
    size_t declared = static_cast<size_t>(p[8]) | static_cast<size_t>(p[9]) << 8;
    size_t pos = 10;
    size_t found = 0;
    while (pos < size - 1) {
      size_t entry = pos;
      // Previous entry length: 1 byte, or 0xFE and 4 bytes.
      if (p[pos] == 0xFE) {
        if (pos + 5 > size - 1) {
          return bad(entry, "truncated prevlen");
        }
        pos += 5;
      } else if (p[pos] == 0xFF) {
        return bad(entry, "stray terminator");
      } else {
        pos += 1;
      }
      if (pos >= size - 1) {
        return bad(entry, "truncated entry");
      }
      uint8_t enc = p[pos];
      uint64_t len = 0;
      if ((enc >> 6) == 0) {
        len = enc & 0x3F;
        pos += 1;
      } else if ((enc >> 6) == 1) {
        if (pos + 2 > size - 1) {
          return bad(entry, "truncated length");
        }
        len = (static_cast<uint64_t>(enc & 0x3F) << 8) | p[pos + 1];
        pos += 2;
      } else if (enc == 0x80) {
        if (pos + 5 > size - 1) {
          return bad(entry, "truncated length");
        }
        len = static_cast<uint64_t>(p[pos + 1]) << 24 | static_cast<uint64_t>(p[pos + 2]) << 16 |
              static_cast<uint64_t>(p[pos + 3]) << 8 | p[pos + 4];
        pos += 5;
      } else {
        // Integer encodings.
        size_t width = 0;
        switch (enc) {
          case 0xC0:
            width = 2;
            break;
          case 0xD0:
            width = 4;
            break;
          case 0xE0:
            width = 8;
            break;
          case 0xF0:
            width = 3;
            break;
          case 0xFE:
            width = 1;
            break;
          default:
            if (enc >= 0xF1 && enc <= 0xFD) {
              if (m_keep) {
                out.push_back(std::to_string(static_cast<int>(enc & 0x0F) - 1));
              }
              pos += 1;
              ++found;
              continue;
            }
            return bad(pos, "unknown encoding " + std::to_string(enc));
        }
        if (pos + 1 + width > size - 1) {
          return bad(entry, "truncated integer");
        }
        uint64_t raw = 0;
        for (size_t i = 0; i < width; ++i) {
          raw |= static_cast<uint64_t>(p[pos + 1 + i]) << (8 * i);
        }
        int64_t value = 0;
        if (width == 3) {
          value = static_cast<int32_t>(static_cast<uint32_t>(raw) << 8) >> 8;
        } else if (width == 1) {
          value = static_cast<int8_t>(raw);
        } else if (width == 2) {
          value = static_cast<int16_t>(raw);
        } else if (width == 4) {
          value = static_cast<int32_t>(raw);
        } else {
          value = static_cast<int64_t>(raw);
        }
        if (m_keep) {
          out.push_back(std::to_string(value));
        }
        pos += 1 + width;
        ++found;
        continue;
      }
      if (len > size - 1 - pos) {
        return bad(entry, "string runs past the end");
      }
      if (m_keep) {
        out.emplace_back(z.data() + pos, static_cast<size_t>(len));
      }
      pos += static_cast<size_t>(len);
      ++found;
    }
    m_validated_count = found;
    if (declared != 0xFFFF && declared != found) {
      return bad(8, "header count " + std::to_string(declared) + " but " + std::to_string(found) +
                        " entries");
    }
    return true;
  }

  bool ziplist_blob(std::vector<std::string>& out, const char* what) {
    std::string_view bytes;
    uint64_t at = 0;
    return blob(bytes, at, what) && ziplist_items(bytes, at, out, what);
  }

  bool intset_blob(RdbValue& v) {
    std::string_view bytes;
    uint64_t at = 0;
    if (!blob(bytes, at, "intset")) {
      return false;
    }
    if (!m_keep) {
      return Intset::validate(bytes, true) || m_c.fail_at(at, "invalid intset");
    }
    std::optional<Intset> set = Intset::from_blob(bytes, true);
    if (!set) {
      return m_c.fail_at(at, "invalid intset");
    }
    if (m_blocks) {
      v.intset = std::move(*set);
      return true;
    }
    v.items.reserve(set->size());
    for (uint32_t i = 0; i < set->size(); ++i) {
      v.items.push_back(std::to_string(set->at(i)));
    }
    return true;
  }

  /// Reads a ziplist or listpack blob of pairs (zset member/score, hash field/value) into
  /// `flat` (left empty when only validating); `at` gets the blob's offset.
  bool pair_blob(bool listpack, const char* what, std::vector<std::string>& flat, uint64_t& at) {
    std::string_view bytes;
    if (!blob(bytes, at, what) || !(listpack ? listpack_items(bytes, at, flat, what)
                                             : ziplist_items(bytes, at, flat, what))) {
      return false;
    }
    size_t elements = m_keep ? flat.size() : m_validated_count;
    if (elements % 2 != 0) {
      return m_c.fail_at(at, std::string(what) + ": odd number of elements");
    }
    return true;
  }

  bool pairs_zset(bool listpack, RdbValue& v) {
    uint64_t at = 0;
    std::vector<std::string> flat;
    const char* what = listpack ? "zset listpack" : "zset ziplist";
    if (!pair_blob(listpack, what, flat, at)) {
      return false;
    }
    v.zset.reserve(flat.size() / 2);
    for (size_t i = 0; i < flat.size(); i += 2) {
      double score = 0;
      if (!text_to_score(flat[i + 1], score)) {
        return m_c.fail_at(at, std::string(what) + ": invalid score '" + flat[i + 1] + "'");
      }
      v.zset.emplace_back(std::move(flat[i]), score);
    }
    return true;
  }

  /// A sorted-set listpack (type 17) kept as a block (keep_blocks) when it is what a server
  /// writes: valid scores, ordered by score then member, no member twice. Anything else is
  /// expanded into pairs, so that building the value orders it and drops the repeats.
  bool block_zset(RdbValue& v) {
    const char* what = "zset listpack";
    std::string_view bytes;
    uint64_t at = 0;
    Listpack lp;
    if (!blob(bytes, at, what) || !adopt_listpack(bytes, at, lp, what)) {
      return false;
    }
    if (lp.size() % 2 != 0) {
      return m_c.fail_at(at, std::string(what) + ": odd number of elements");
    }
    // A score as the listpack holds it: an integer, or text the reader must check.
    auto score_of = [](const LpValue& entry, double& out) {
      if (entry.is_int()) {
        out = static_cast<double>(entry.integer());
        return true;
      }
      return text_to_score(std::string(entry.str()), out);
    };
    bool ordered = true;
    double prev_score = 0;
    char prev_buf[24];
    char buf[24];
    std::string_view prev_member;
    for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(lp.next(p))) {
      LpValue member = lp.get(p);
      LpValue score_value = lp.get(lp.next(p));
      double score = 0;
      if (!score_of(score_value, score)) {
        return m_c.fail_at(
            at, std::string(what) + ": invalid score '" + std::string(score_value.str()) + "'");
      }
      std::string_view text = member.view(buf);
      if (p != lp.first() && (score < prev_score || (score == prev_score && text <= prev_member))) {
        ordered = false;
      }
      prev_score = score;
      std::memcpy(prev_buf, buf, sizeof(buf));
      prev_member = member.is_int() ? std::string_view(prev_buf, text.size()) : text;
    }
    if (ordered && !has_repeats(lp, 2)) {
      v.packed.push_back(std::move(lp));
      return true;
    }
    for (Listpack::Pos p = lp.first(); p != Listpack::k_none; p = lp.next(lp.next(p))) {
      double score = 0;
      score_of(lp.get(lp.next(p)), score);  // checked above
      v.zset.emplace_back(lp_text(lp.get(p)), score);
    }
    return true;
  }

  bool pairs_hash(bool listpack, RdbValue& v) {
    uint64_t at = 0;
    std::vector<std::string> flat;
    const char* what = listpack ? "hash listpack" : "hash ziplist";
    if (!pair_blob(listpack, what, flat, at)) {
      return false;
    }
    v.hash.reserve(flat.size() / 2);
    for (size_t i = 0; i < flat.size(); i += 2) {
      v.hash.push_back({std::move(flat[i]), std::move(flat[i + 1]), -1});
    }
    return true;
  }

  bool zipmap_hash(RdbValue& v) {
    std::string_view z;
    uint64_t at = 0;
    if (!blob(z, at, "hash zipmap")) {
      return false;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(z.data());
    size_t size = z.size();
    auto bad = [&](size_t pos, const char* why) {
      return m_c.fail_at(at, std::string("hash zipmap: invalid (") + why + " at blob byte " +
                                 std::to_string(pos) + ")");
    };
    if (size < 2) {
      return bad(0, "too short");
    }
    size_t pos = 1;
    auto read_len = [&](uint64_t& len) {
      if (pos >= size) {
        return false;
      }
      if (p[pos] < 254) {
        len = p[pos];
        pos += 1;
        return true;
      }
      if (p[pos] == 254 && pos + 5 <= size) {
        len = static_cast<uint64_t>(p[pos + 1]) | static_cast<uint64_t>(p[pos + 2]) << 8 |
              static_cast<uint64_t>(p[pos + 3]) << 16 | static_cast<uint64_t>(p[pos + 4]) << 24;
        pos += 5;
        return true;
      }
      return false;
    };
    while (pos < size && p[pos] != 0xFF) {
      size_t entry = pos;
      uint64_t klen = 0;
      uint64_t vlen = 0;
      if (!read_len(klen) || klen > size - pos) {
        return bad(entry, "bad field length");
      }
      std::string field(z.data() + pos, static_cast<size_t>(klen));
      pos += static_cast<size_t>(klen);
      if (!read_len(vlen) || pos >= size) {
        return bad(entry, "bad value length");
      }
      uint8_t free_bytes = p[pos++];
      if (vlen + free_bytes > size - pos) {
        return bad(entry, "value runs past the end");
      }
      if (m_keep) {
        v.hash.push_back({std::move(field), std::string(z.data() + pos, vlen), -1});
      }
      pos += static_cast<size_t>(vlen) + free_bytes;
    }
    if (pos != size - 1) {
      return bad(pos, "no terminator at the end");
    }
    return true;
  }

  bool quicklist(bool v2, RdbValue& v) {
    uint64_t nodes = 0;
    if (!m_c.count(nodes, "quicklist nodes")) {
      return false;
    }
    for (uint64_t i = 0; i < nodes; ++i) {
      if (!quicklist_node(v2, v)) {
        return false;
      }
      note_progress();
    }
    return true;
  }

  /// One quicklist node: its elements appended to v.items (or kept as a block).
  bool quicklist_node(bool v2, RdbValue& v) {
    uint64_t container = rdb::k_container_packed;
    if (v2) {
      uint64_t at = m_c.offset();
      if (!m_c.length(container, "quicklist container")) {
        return false;
      }
      if (container != rdb::k_container_packed && container != rdb::k_container_plain) {
        return m_c.fail_at(at, "invalid quicklist container " + std::to_string(container));
      }
    }
    if (offloading() && container == rdb::k_container_packed) {
      return offload(v2 ? BlobKind::node_listpack : BlobKind::node_ziplist);
    }
    std::string_view bytes;
    uint64_t at = 0;
    if (!blob(bytes, at, "quicklist node")) {
      return false;
    }
    if (bytes.empty()) {
      return m_c.fail_at(at, "empty quicklist node");
    }
    size_t before = v.items.size();
    if (container == rdb::k_container_plain) {
      if (m_keep) {
        v.items.emplace_back(bytes);
      }
    } else if (v2 && m_blocks) {
      Listpack lp;
      if (!adopt_listpack(bytes, at, lp, "quicklist node")) {
        return false;
      }
      // Empty packed nodes are dropped, as Valkey does on load.
      if (!lp.empty()) {
        v.list_nodes.push_back({static_cast<uint32_t>(lp.size()), false});
        v.packed.push_back(std::move(lp));
      }
      return true;
    } else if (!(v2 ? listpack_items(bytes, at, v.items, "quicklist node")
                    : ziplist_items(bytes, at, v.items, "quicklist node"))) {
      return false;
    }
    // Empty packed nodes are dropped, as Valkey does on load.
    if (v.items.size() > before) {
      v.list_nodes.push_back(
          {static_cast<uint32_t>(v.items.size() - before), container == rdb::k_container_plain});
    }
    return true;
  }

  bool metadata_hash(bool relative, RdbValue& v) {
    uint64_t min_expire = 0;
    if (relative && !m_c.uint_le(8, min_expire, "hash min expire")) {
      return false;
    }
    uint64_t n = 0;
    if (!m_c.count(n, "hash fields", 3)) {
      return false;
    }
    v.hash.resize(n);
    for (auto& f : v.hash) {
      if (!metadata_field(relative, min_expire, f)) {
        return false;
      }
      note_progress();
    }
    return true;
  }

  /// One field of a field-TTL hash (types 22 and 24): TTL, field, value.
  bool metadata_field(bool relative, uint64_t min_expire, RdbHashField& f) {
    uint64_t at = m_c.offset();
    uint64_t ttl = 0;
    if (!m_c.length(ttl, "hash field TTL")) {
      return false;
    }
    uint64_t expire_at = ttl;
    if (relative && ttl != 0) {
      expire_at = ttl + min_expire - 1;  // stored +1 so that 0 can mean "no TTL"
    }
    if (expire_at > k_max_field_expire) {
      return m_c.fail_at(at, "invalid hash field expire time " + std::to_string(expire_at));
    }
    f.expire_ms = expire_at == 0 ? -1 : static_cast<int64_t>(expire_at);
    return m_c.string(f.field, "hash field") && m_c.string(f.value, "hash value");
  }

  /// Valkey 9's RDB_TYPE_HASH_2 (valkey-io/valkey src/rdb.c, rdbSaveObject/rdbLoadObject):
  /// a field count, then per field the field and value strings and the field's absolute
  /// expire time in unix ms as 8 bytes little-endian, -1 for none (EXPIRY_NONE); anything
  /// below -1 is refused, as Valkey does.
  bool valkey_hash_2(RdbValue& v) {
    uint64_t n = 0;
    if (!m_c.count(n, "hash fields", 10)) {
      return false;
    }
    v.hash.resize(n);
    for (auto& f : v.hash) {
      if (!m_c.string(f.field, "hash field") || !m_c.string(f.value, "hash value")) {
        return false;
      }
      uint64_t at = m_c.offset();
      uint64_t raw = 0;
      if (!m_c.uint_le(8, raw, "hash field expire time")) {
        return false;
      }
      auto when = static_cast<int64_t>(raw);
      if (when < -1) {
        return m_c.fail_at(at, "invalid hash field expire time " + std::to_string(when));
      }
      f.expire_ms = when;
    }
    return true;
  }

  /// Valkey 9.2's RDB_TYPE_PATH_HASH (valkey-io/valkey PR #4506, rdbSaveObject and
  /// rdbLoadObject for OBJ_RADIX): a path count, then per path the path string, a field count
  /// (zero is corrupt, as Valkey refuses it) and that many field and value strings. A path
  /// or a field that repeats is refused too: the radix tree and the hash cannot hold it.
  bool path_hash(RdbValue& v) {
    uint64_t n = 0;
    if (!m_c.count(n, "path hash paths", 3)) {
      return false;
    }
    v.paths.resize(n);
    std::unordered_set<std::string_view> paths;
    paths.reserve(n);
    for (auto& p : v.paths) {
      uint64_t at = m_c.offset();
      if (!m_c.string(p.path, "path hash path")) {
        return false;
      }
      if (!paths.insert(p.path).second) {
        return m_c.fail_at(at, "path hash path repeats");
      }
      uint64_t fields = 0;
      uint64_t count_at = m_c.offset();
      if (!m_c.count(fields, "path hash fields", 2)) {
        return false;
      }
      if (fields == 0) {
        return m_c.fail_at(count_at, "path hash path without fields");
      }
      p.fields.resize(fields);
      std::unordered_set<std::string_view> names;
      names.reserve(fields);
      for (auto& [field, value] : p.fields) {
        uint64_t field_at = m_c.offset();
        if (!m_c.string(field, "path hash field") || !m_c.string(value, "path hash value")) {
          return false;
        }
        if (!names.insert(field).second) {
          return m_c.fail_at(field_at, "path hash field repeats");
        }
      }
    }
    return true;
  }

  bool listpack_ex_hash(bool with_min_expire, RdbValue& v) {
    uint64_t min_expire = 0;
    if (with_min_expire && !m_c.uint_le(8, min_expire, "hash min expire")) {
      return false;
    }
    std::string_view bytes;
    uint64_t at = 0;
    std::vector<std::string> flat;
    if (!blob(bytes, at, "hash listpack") ||
        !listpack_items(bytes, at, flat, "hash listpack with TTLs")) {
      return false;
    }
    if (flat.size() % 3 != 0) {
      return m_c.fail_at(at, "hash listpack with TTLs: elements are not field/value/TTL triplets");
    }
    v.hash.reserve(flat.size() / 3);
    for (size_t i = 0; i < flat.size(); i += 3) {
      int64_t ttl = 0;
      if (!text_to_i64(flat[i + 2], ttl) || ttl < 0 ||
          static_cast<uint64_t>(ttl) > k_max_field_expire) {
        return m_c.fail_at(at, "hash listpack with TTLs: invalid TTL '" + flat[i + 2] + "'");
      }
      v.hash.push_back({std::move(flat[i]), std::move(flat[i + 1]), ttl == 0 ? -1 : ttl});
    }
    return true;
  }

  bool module_value(RdbValue& v) {
    uint64_t id = 0;
    if (!m_c.length(id, "module id")) {
      return false;
    }
    v.module_name = module_type_name(id, &v.module_version);
    if (!m_options.skip_modules) {
      return m_c.fail("module value of type '" + v.module_name +
                      "': keyshift has no such module (skip module keys to go on)");
    }
    return skip_module_data(m_c, "module value");
  }

  bool lp_int(const std::vector<std::string>& e, size_t& i, int64_t& out, uint64_t at) {
    if (i >= e.size() || !text_to_i64(e[i], out)) {
      return m_c.fail_at(at, "stream listpack: integer expected at element " + std::to_string(i));
    }
    ++i;
    return true;
  }

  bool stream(uint8_t type, RdbStream& s) {
    uint64_t nodes = 0;
    if (!m_c.count(nodes, "stream nodes", 2)) {
      return false;
    }
    StreamWalk w;
    w.keep_nodes = !m_light_stream;
    for (uint64_t n = 0; n < nodes; ++n) {
      if (!stream_node(w, s)) {
        return false;
      }
      if (m_light_stream) {
        s.entries.clear();
      }
      note_progress();
    }
    return stream_tail(type, w, s);
  }

  /// One stream node: its live entries appended to s.entries (and the node to s.nodes).
  bool stream_node(StreamWalk& w, RdbStream& s) {
    std::string node_key;
    uint64_t key_at = m_c.offset();
    if (!m_c.string(node_key, "stream node key")) {
      return false;
    }
    if (node_key.size() != 16) {
      return m_c.fail_at(key_at, "stream node key is not a 16-byte stream ID");
    }
    RdbStreamId master;
    for (int i = 0; i < 8; ++i) {
      master.ms = (master.ms << 8) | static_cast<uint8_t>(node_key[static_cast<size_t>(i)]);
      master.seq = (master.seq << 8) | static_cast<uint8_t>(node_key[static_cast<size_t>(i + 8)]);
    }
    std::string_view bytes;
    uint64_t at = 0;
    std::vector<std::string> e;
    if (!blob(bytes, at, "stream node") || !listpack_items(bytes, at, e, "stream node")) {
      return false;
    }
    if (e.empty()) {
      return m_c.fail_at(at, "empty listpack inside stream");
    }
    size_t i = 0;
    int64_t count = 0;
    int64_t deleted = 0;
    int64_t master_fields = 0;
    if (!lp_int(e, i, count, at) || !lp_int(e, i, deleted, at) ||
        !lp_int(e, i, master_fields, at)) {
      return false;
    }
    if (count < 0 || deleted < 0 || master_fields < 0 ||
        static_cast<uint64_t>(master_fields) > e.size() - i) {
      return m_c.fail_at(at, "stream node: invalid master entry");
    }
    std::vector<std::string> fields(e.begin() + static_cast<std::ptrdiff_t>(i),
                                    e.begin() + static_cast<std::ptrdiff_t>(i) + master_fields);
    i += static_cast<size_t>(master_fields);
    int64_t zero = 0;
    if (!lp_int(e, i, zero, at) || zero != 0) {
      return m_c.fail_at(at, "stream node: master entry not terminated by 0");
    }
    int64_t seen = 0;
    int64_t live = 0;
    while (i < e.size()) {
      int64_t flags = 0;
      int64_t ms_diff = 0;
      int64_t seq_diff = 0;
      if (!lp_int(e, i, flags, at) || !lp_int(e, i, ms_diff, at) || !lp_int(e, i, seq_diff, at)) {
        return false;
      }
      RdbStreamEntry entry;
      entry.id = {master.ms + static_cast<uint64_t>(ms_diff),
                  master.seq + static_cast<uint64_t>(seq_diff)};
      if ((flags & rdb::k_stream_item_samefields) != 0) {
        if (fields.size() > e.size() - i) {
          return m_c.fail_at(at, "stream node: entry runs past the listpack");
        }
        for (const std::string& f : fields) {
          entry.fields.emplace_back(f, std::move(e[i++]));
        }
      } else {
        int64_t nf = 0;
        if (!lp_int(e, i, nf, at)) {
          return false;
        }
        if (nf < 0 || static_cast<uint64_t>(nf) > (e.size() - i) / 2) {
          return m_c.fail_at(at, "stream node: entry runs past the listpack");
        }
        for (int64_t k = 0; k < nf; ++k) {
          std::string f = std::move(e[i++]);
          entry.fields.emplace_back(std::move(f), std::move(e[i++]));
        }
      }
      int64_t lp_count = 0;
      if (!lp_int(e, i, lp_count, at)) {
        return false;
      }
      // IDs ascend through the whole stream, deleted entries included: the engine keeps
      // the nodes as they are and relies on it.
      bool first_entry = w.nodes == 0 && seen == 0;
      if (!first_entry && !(w.prev_id.ms < entry.id.ms ||
                            (w.prev_id.ms == entry.id.ms && w.prev_id.seq < entry.id.seq))) {
        return m_c.fail_at(at, "stream node: entry IDs out of order");
      }
      if (seen == 0 &&
          (entry.id.ms < master.ms || (entry.id.ms == master.ms && entry.id.seq < master.seq))) {
        return m_c.fail_at(at, "stream node: first entry before the node's master ID");
      }
      w.prev_id = entry.id;
      if ((flags & rdb::k_stream_item_deleted) == 0) {
        if (w.live == 0 && live == 0) {
          w.first_id = entry.id;
        }
        s.entries.push_back(std::move(entry));
        ++live;
      } else if (w.keep_deleted) {
        entry.deleted = true;
        s.entries.push_back(std::move(entry));
      }
      ++seen;
    }
    if (seen != count + deleted || live != count) {
      return m_c.fail_at(at, "stream node: " + std::to_string(live) + " live and " +
                                 std::to_string(seen - live) + " deleted entries, header says " +
                                 std::to_string(count) + " and " + std::to_string(deleted));
    }
    if (count == 0) {
      return m_c.fail_at(at, "stream node without live entries");
    }
    if (w.keep_nodes) {
      s.nodes.push_back({master, std::string(bytes)});
    }
    w.live += static_cast<uint64_t>(live);
    if (w.nodes > 0 && !(w.prev_master.ms < master.ms ||
                         (w.prev_master.ms == master.ms && w.prev_master.seq < master.seq))) {
      return m_c.fail_at(key_at, "stream nodes out of order");
    }
    w.prev_master = master;
    ++w.nodes;
    return true;
  }

  /// What follows the nodes: length, IDs, consumer groups.
  bool stream_tail(uint8_t type, const StreamWalk& w, RdbStream& s) {
    bool ok = m_c.length(s.length, "stream length") && m_c.length(s.last_id.ms, "stream last ID") &&
              m_c.length(s.last_id.seq, "stream last ID");
    if (!ok) {
      return false;
    }
    if (type >= static_cast<uint8_t>(Type::stream_listpacks_2)) {
      s.has_v2_metadata = true;
      ok = m_c.length(s.first_id.ms, "stream first ID") &&
           m_c.length(s.first_id.seq, "stream first ID") &&
           m_c.length(s.max_deleted_id.ms, "stream max deleted ID") &&
           m_c.length(s.max_deleted_id.seq, "stream max deleted ID") &&
           m_c.length(s.entries_added, "stream entries added");
      if (!ok) {
        return false;
      }
    } else {
      s.entries_added = s.length;
      if (w.live > 0) {
        s.first_id = w.first_id;
      }
    }
    if (s.length != w.live) {
      return m_c.fail("stream length " + std::to_string(s.length) + " but " +
                      std::to_string(w.live) + " live entries");
    }
    uint64_t groups = 0;
    if (!m_c.count(groups, "stream consumer groups", 3)) {
      return false;
    }
    s.groups.resize(groups);
    for (RdbStreamGroup& g : s.groups) {
      if (!m_c.string(g.name, "consumer group name") ||
          !m_c.length(g.last_delivered.ms, "group last ID") ||
          !m_c.length(g.last_delivered.seq, "group last ID")) {
        return false;
      }
      if (type >= static_cast<uint8_t>(Type::stream_listpacks_2)) {
        uint64_t read = 0;
        if (!m_c.length(read, "group entries read")) {
          return false;
        }
        g.entries_read = static_cast<int64_t>(read);
      }
      uint64_t pel = 0;
      if (!m_c.count(pel, "group pending entries", 17)) {
        return false;
      }
      g.pending.resize(pel);
      for (RdbStreamNack& nack : g.pending) {
        uint64_t time = 0;
        if (!m_c.uint_be(8, nack.id.ms, "pending ID") ||
            !m_c.uint_be(8, nack.id.seq, "pending ID") ||
            !m_c.uint_le(8, time, "pending delivery time") ||
            !m_c.length(nack.delivery_count, "pending delivery count")) {
          return false;
        }
        nack.delivery_time_ms = static_cast<int64_t>(time);
      }
      uint64_t consumers = 0;
      if (!m_c.count(consumers, "group consumers", 10)) {
        return false;
      }
      g.consumers.resize(consumers);
      for (RdbStreamConsumer& con : g.consumers) {
        uint64_t seen_time = 0;
        if (!m_c.string(con.name, "consumer name") ||
            !m_c.uint_le(8, seen_time, "consumer seen time")) {
          return false;
        }
        con.seen_time_ms = static_cast<int64_t>(seen_time);
        if (type >= static_cast<uint8_t>(Type::stream_listpacks_3)) {
          uint64_t active = 0;
          if (!m_c.uint_le(8, active, "consumer active time")) {
            return false;
          }
          con.active_time_ms = static_cast<int64_t>(active);
        }
        uint64_t owned = 0;
        if (!m_c.count(owned, "consumer pending entries", 16)) {
          return false;
        }
        con.pending.resize(owned);
        for (RdbStreamId& id : con.pending) {
          uint64_t at = m_c.offset();
          if (!m_c.uint_be(8, id.ms, "consumer pending ID") ||
              !m_c.uint_be(8, id.seq, "consumer pending ID")) {
            return false;
          }
          bool known = false;
          for (const RdbStreamNack& nack : g.pending) {
            known = known || nack.id == id;
          }
          if (!known) {
            return m_c.fail_at(at, "consumer pending entry not in the group's pending list");
          }
        }
      }
    }
    return true;
  }

  /// Tells RdbReadOptions::passed how far the read has come, every few MB.
  void note_progress() {
    if (m_options.passed && m_c.offset() >= m_passed_at + k_passed_every) {
      m_passed_at = m_c.offset();
      m_options.passed(m_passed_at);
    }
  }
  static constexpr uint64_t k_passed_every = uint64_t{4} << 20;
  bool m_light_stream = false;
  uint64_t m_passed_at = 0;

  // Redis' EB_EXPIRE_TIME_MAX: field expiry times use 48 bits.
  static constexpr uint64_t k_max_field_expire = (uint64_t{1} << 48) - 1;

  Cursor& m_c;
  const RdbReadOptions& m_options;
  // False when only validating (RdbReadOptions::materialize): contents are checked, not kept.
  bool m_keep = true;
  // RdbReadOptions::keep_blocks: listpacks and intsets are kept as blocks.
  bool m_blocks = false;
  bool m_skim = false;
  std::vector<BlobTask>* m_offload = nullptr;
  size_t m_validated_count = 0;  // elements of the last blob validated without keeping
  std::string m_scratch;         // decoded int/LZF strings that are not kept
  std::string m_blob_scratch;    // the last int/LZF-encoded blob
};

/// Checks the blobs a validate-only read hands over, on its own thread, in file order; stops
/// at the first one that fails.
class BlobChecker {
 public:
  BlobChecker(std::string_view file, const RdbReadOptions& options)
      : m_file(file), m_options(options), m_thread([this] { run(); }) {}
  ~BlobChecker() {
    if (m_thread.joinable()) {
      finish();
    }
  }
  BlobChecker(const BlobChecker&) = delete;
  BlobChecker& operator=(const BlobChecker&) = delete;

  /// Hands over `tasks` (left empty).
  void add(std::vector<BlobTask>& tasks) {
    std::lock_guard lock(m_mu);
    m_chunks.push_back(std::move(tasks));
    tasks.clear();
    m_wake.notify_one();
  }
  /// Waits until every blob handed over is checked; the first failure, if any.
  std::optional<RdbError> finish() {
    {
      std::lock_guard lock(m_mu);
      m_done = true;
      m_wake.notify_one();
    }
    m_thread.join();
    return std::move(m_error);
  }

 private:
  void run() {
    for (;;) {
      std::vector<BlobTask> chunk;
      {
        std::unique_lock lock(m_mu);
        m_wake.wait(lock, [&] { return !m_chunks.empty() || m_done; });
        if (m_chunks.empty()) {
          return;
        }
        chunk = std::move(m_chunks.front());
        m_chunks.pop_front();
      }
      if (m_error) {
        continue;  // drain: only the first failure counts
      }
      for (const BlobTask& t : chunk) {
        Cursor c(m_file.substr(t.at), t.at);
        ValueDecoder d(c, m_options);
        if (!d.check_blob(t.kind)) {
          m_error = c.take_error();
          break;
        }
      }
    }
  }

  std::string_view m_file;
  const RdbReadOptions& m_options;
  std::mutex m_mu;
  std::condition_variable m_wake;
  std::deque<std::vector<BlobTask>> m_chunks;
  bool m_done = false;
  std::optional<RdbError> m_error;  // written by the thread, read after join
  std::thread m_thread;             // last: starts once the members above exist
};

/// Reads an RDB record by record: a whole file at once (read_rdb), or a stream fed in
/// pieces (RdbStreamReader), whose records are read again from their start when a piece
/// ends inside one.
class FileReader {
 public:
  /// What one record() did.
  enum class Step : uint8_t { more, done, failed };

  FileReader(std::string_view file, RdbVisitor& visitor, const RdbReadOptions& options)
      : m_file(file), m_c(file, 0), m_visitor(visitor), m_options(options) {}

  /// Points the reader at `data`, which starts at file offset `base`; `partial`: more may
  /// follow, so running out of data is not an error (Cursor::short_of_data).
  void set_data(std::string_view data, uint64_t base, bool partial) {
    m_file = data;
    m_c = Cursor(data, base, partial);
  }
  Cursor& cursor() { return m_c; }
  const RdbSummary& summary() const { return m_summary; }
  /// The CRC64 of everything before the data set_data() gave (a stream's dropped bytes).
  void set_crc_prefix(uint64_t crc) { m_crc_prefix = crc; }

  Expected<RdbSummary, RdbError> run() {
    // The checksum of a big file is worked out on the other core while this one decodes,
    // over everything but the last 8 bytes: where the file ends without trailing bytes.
    if (m_options.verify_checksum && m_file.size() >= k_parallel_crc_min_size) {
      m_crc_guess = std::async(std::launch::async, [file = m_file] {
        return crc64(0, file.substr(0, file.size() - 8));
      });
    }
    if (!m_options.materialize && m_file.size() >= m_options.parallel_check_min_bytes) {
      m_checker.emplace(m_file, m_options);
    }
    bool ok = header() && body();
    if (m_crc_guess.valid()) {
      m_crc_guess.wait();  // never leave the thread running past the mapping's life
    }
    if (m_checker) {
      // A blob that fails comes before anything this thread failed on later in the file.
      m_checker->add(m_tasks);
      std::optional<RdbError> blob_error = m_checker->finish();
      if (blob_error && (ok || blob_error->offset < m_c.error().offset)) {
        return Unexpected{std::move(*blob_error)};
      }
    }
    if (!ok) {
      return Unexpected{m_c.take_error()};
    }
    return m_summary;
  }

  bool header() {
    std::string_view magic;
    if (!m_c.bytes(9, magic, "the RDB header")) {
      return false;
    }
    if (magic.substr(0, 4) == "VKCS") {
      // Valkey 9.2's opt-in streaming compression wraps the whole file in an envelope
      // ("VKCS", version, codec, flags, stream kind; src/compression_stream.h) and LZ4 or
      // Zstd frames; the RDB inside is only reachable by decompressing.
      auto codec = static_cast<uint8_t>(magic[5]);
      std::string name = codec == 1   ? "LZ4"
                         : codec == 2 ? "Zstd"
                                      : "codec " + std::to_string(codec);
      return m_c.fail_at(0, "a Valkey 9.2 streaming-compressed file (VKCS envelope, " + name +
                                "), which is not supported; save it again without RDB "
                                "streaming compression");
    }
    if (magic.substr(0, 6) == "VALKEY") {
      // Valkey 9 writes "VALKEY" and three digits (rdbSaveRio: "VALKEY%03d"), from 80 on;
      // with that magic it refuses 79 and below (rdbIsVersionAccepted).
      int version = 0;
      for (char ch : magic.substr(6)) {
        if (ch < '0' || ch > '9') {
          return m_c.fail_at(6, "invalid RDB version field '" + std::string(magic.substr(6)) + "'");
        }
        version = version * 10 + (ch - '0');
      }
      if (version < rdb::k_valkey_first_version || version > rdb::k_valkey_max_version) {
        return m_c.fail_at(6, "unsupported RDB version " + std::to_string(version) +
                                  " (Valkey 9.0 writes " +
                                  std::to_string(rdb::k_valkey_first_version) + ", 9.2 writes " +
                                  std::to_string(rdb::k_valkey_max_version) + ")");
      }
      m_summary.version = version;
      m_summary.valkey_magic = true;
      return true;
    }
    if (magic.substr(0, 5) != "REDIS") {
      return m_c.fail_at(0, "not an RDB file (no REDIS or VALKEY magic)");
    }
    int version = 0;
    for (char ch : magic.substr(5)) {
      if (ch < '0' || ch > '9') {
        return m_c.fail_at(5, "invalid RDB version field '" + std::string(magic.substr(5)) + "'");
      }
      version = version * 10 + (ch - '0');
    }
    if (version < rdb::k_min_version || version > rdb::k_max_version) {
      return m_c.fail_at(5, "unsupported RDB version " + std::to_string(version));
    }
    m_summary.version = version;
    return true;
  }

  /// A type byte past the newest keyshift reads, in a REDIS file: a later Redis's type.
  /// Every type byte is followed by its key's name, so the refusal names the key; a name
  /// that does not read leaves the plain message.
  Step newer_type(uint64_t at, uint8_t t) {
    size_t record = m_c.pos() - 1;
    std::string name;
    if (!m_c.string(name, "a key name")) {
      if (m_c.short_of_data()) {
        return Step::failed;  // read the record again when more of the stream is here
      }
      m_c.rewind(record + 1);
      m_c.fail_at(at, "unknown RDB opcode or value type " + std::to_string(t));
      return Step::failed;
    }
    m_c.fail_at(at, "key " + quote_repr(name) + " in db " + std::to_string(m_db) +
                        " has value type " + std::to_string(t) +
                        ", which keyshift does not read (the newest it knows is " +
                        std::to_string(static_cast<int>(Type::hash_listpack_ex)) +
                        ", Redis 7.4 and 8's HASH_LISTPACK_EX; a later Redis wrote this key)");
    return Step::failed;
  }

  bool body() {
    for (;;) {
      Step step = record();
      if (step != Step::more) {
        return step == Step::done;
      }
    }
  }

  /// One top-level record: an opcode with its operands, or a key with its value. The
  /// per-key metadata opcodes only change members, which a key consumes once it is whole,
  /// so a record cut short can be read again from its start.
  Step record() {
    {
      uint64_t at = m_c.offset();
      uint8_t t = 0;
      if (!m_c.u8(t, "an opcode or value type")) {
        return Step::failed;
      }
      uint64_t a = 0;
      uint64_t b = 0;
      uint64_t c = 0;
      std::string s1;
      std::string s2;
      switch (t) {
        case static_cast<uint8_t>(rdb::Opcode::eof):
          return trailer() ? Step::done : Step::failed;
        case static_cast<uint8_t>(rdb::Opcode::aux):
          if (!m_c.string(s1, "AUX name") || !m_c.string(s2, "AUX value")) {
            return Step::failed;
          }
          m_visitor.on_aux(s1, s2);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::selectdb):
          if (!m_c.length(m_db, "SELECTDB")) {
            return Step::failed;
          }
          m_visitor.on_select_db(m_db);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::resizedb):
          if (!m_c.length(a, "RESIZEDB") || !m_c.length(b, "RESIZEDB")) {
            return Step::failed;
          }
          m_visitor.on_resize_db(a, b);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::expiretime):
          if (!m_c.uint_le(4, a, "EXPIRETIME")) {
            return Step::failed;
          }
          m_expire_ms = static_cast<int64_t>(a) * 1000;
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::expiretime_ms):
          if (!m_c.uint_le(8, a, "EXPIRETIME_MS")) {
            return Step::failed;
          }
          m_expire_ms = static_cast<int64_t>(a);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::idle):
          if (!m_c.length(a, "IDLE")) {
            return Step::failed;
          }
          m_idle = static_cast<int64_t>(a);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::freq): {
          uint8_t f = 0;
          if (!m_c.u8(f, "FREQ")) {
            return Step::failed;
          }
          m_freq = f;
          return Step::more;
        }
        case static_cast<uint8_t>(rdb::Opcode::slot_info):
          if (!m_c.length(a, "SLOT_INFO") || !m_c.length(b, "SLOT_INFO") ||
              !m_c.length(c, "SLOT_INFO")) {
            return Step::failed;
          }
          m_visitor.on_slot_info(a, b, c);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::function2):
          if (!m_c.string(s1, "FUNCTION2 library code")) {
            return Step::failed;
          }
          m_visitor.on_function(s1);
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::function_pre_ga):
          m_c.fail_at(at, "pre-release function format (opcode 246) is not supported");
          return Step::failed;
        case static_cast<uint8_t>(rdb::Opcode::module_aux):
          if (!module_aux()) {
            return Step::failed;
          }
          return Step::more;
        case static_cast<uint8_t>(rdb::Opcode::slot_import):
          if (!m_summary.valkey_magic) {
            break;  // not an opcode before Valkey 9
          }
          if (!slot_import()) {
            return Step::failed;
          }
          return Step::more;
        default:
          break;
      }
      if (t == static_cast<uint8_t>(rdb::Opcode::update) && m_summary.valkey_magic &&
          m_summary.version >= rdb::k_valkey_path_hash_version) {
        // Valkey 9.2's forkless save replays writes made while it ran as commands inside
        // the file; they rewrite keys read earlier, which a value-by-value reading cannot
        // honour.
        m_c.fail_at(at,
                    "opcode 242 (a write command inlined by a Valkey 9.2 forkless save) "
                    "is not supported; save the file again with a forked BGSAVE");
        return Step::failed;
      }
      int type = rdb::object_type_for_version(t, m_summary.version);
      if (type < 0) {
        if (m_summary.valkey_magic && t >= rdb::k_valkey_hash_2_on_disk &&
            t <= static_cast<uint8_t>(Type::hash_listpack_ex)) {
          m_c.fail_at(at, "value type " + std::to_string(t) + " is not a Valkey " +
                              std::to_string(m_summary.version) + " type");
          return Step::failed;
        }
        if (!m_summary.valkey_magic && t > static_cast<uint8_t>(Type::hash_listpack_ex) &&
            t < static_cast<uint8_t>(rdb::Opcode::update)) {
          return newer_type(at, t);
        }
        m_c.fail_at(at, "unknown RDB opcode or value type " + std::to_string(t));
        return Step::failed;
      }
      t = static_cast<uint8_t>(type);
      RdbKey key;
      key.db = m_db;
      key.offset = at;
      key.expire_ms = m_expire_ms;
      key.idle_s = m_idle;
      key.freq = m_freq;
      if (!m_c.string(key.key, "a key name")) {
        return Step::failed;
      }
      uint64_t value_at = m_c.offset();
      key.value_offset = value_at;
      key.deferred = m_options.materialize && !ValueDecoder::kept_whole(t, m_options) &&
                     m_visitor.defer_value(t);
      if (key.deferred) {
        RdbReadOptions skim = m_options;
        skim.materialize = false;
        ValueDecoder skimmer(m_c, skim, &m_skimmed, true);
        bool stepped = skimmer.decode(t, key.value);
        m_skimmed.clear();
        if (!stepped) {
          return Step::failed;
        }
      } else {
        ValueDecoder decoder(m_c, m_options, m_checker ? &m_tasks : nullptr);
        if (!decoder.decode(t, key.value)) {
          return Step::failed;
        }
      }
      if (m_tasks.size() >= k_blob_chunk) {
        m_checker->add(m_tasks);
      }
      key.value_bytes = m_c.offset() - value_at;
      m_expire_ms = -1;
      m_idle = -1;
      m_freq = -1;
      ++m_summary.keys;
      if (!m_visitor.on_key(key)) {
        m_summary.stopped = true;
        m_summary.end_offset = m_c.offset();
        return Step::done;
      }
      return Step::more;
    }
  }

  /// Valkey 9's RDB_OPCODE_SLOT_IMPORT (cluster_migrateslots.c, clusterRDBSaveSlotImports):
  /// the import job's name as a string, a count of slot ranges, then each range's start
  /// and end slot as lengths.
  bool slot_import() {
    std::string name;
    uint64_t ranges = 0;
    if (!m_c.string(name, "SLOT_IMPORT job name") ||
        !m_c.count(ranges, "SLOT_IMPORT slot ranges", 2)) {
      return false;
    }
    for (uint64_t i = 0; i < ranges; ++i) {
      uint64_t start = 0;
      uint64_t end = 0;
      uint64_t at = m_c.offset();
      if (!m_c.length(start, "SLOT_IMPORT range") || !m_c.length(end, "SLOT_IMPORT range")) {
        return false;
      }
      if (start > end || end >= k_cluster_slots) {
        return m_c.fail_at(at, "invalid SLOT_IMPORT slot range " + std::to_string(start) + "-" +
                                   std::to_string(end));
      }
    }
    m_visitor.on_slot_import(name, ranges);
    return true;
  }

  bool module_aux() {
    uint64_t id = 0;
    uint64_t when_op = 0;
    uint64_t when = 0;
    if (!m_c.length(id, "module aux id") || !m_c.length(when_op, "module aux")) {
      return false;
    }
    if (when_op != rdb::k_module_op_uint) {
      return m_c.fail("module aux data: 'when' is not an unsigned integer");
    }
    if (!m_c.length(when, "module aux")) {
      return false;
    }
    std::string name = module_type_name(id);
    // Aux data only matters to its module: skipped whatever the options say.
    if (!skip_module_data(m_c, "module aux data")) {
      return false;
    }
    m_visitor.on_module_aux(name);
    return true;
  }

  bool trailer() {
    size_t body_end = m_c.pos();
    if (m_summary.version >= rdb::k_first_checksum_version) {
      m_summary.has_checksum = true;
      if (!m_c.uint_le(8, m_summary.checksum, "the CRC64 checksum")) {
        return false;
      }
      if (m_summary.checksum != 0 && m_options.verify_checksum) {
        uint64_t computed = m_crc_guess.valid() && body_end == m_file.size() - 8
                                ? m_crc_guess.get()
                                : crc64(m_crc_prefix, m_file.substr(0, body_end));
        if (computed != m_summary.checksum) {
          char buf[80];
          std::snprintf(buf, sizeof buf, "wrong CRC64 checksum: stored %016llx, computed %016llx",
                        static_cast<unsigned long long>(m_summary.checksum),
                        static_cast<unsigned long long>(computed));
          return m_c.fail_at(body_end, buf);
        }
        m_summary.checksum_verified = true;
      }
    }
    m_summary.end_offset = m_c.offset();
    return true;
  }

  static constexpr uint64_t k_cluster_slots = 16384;
  // Files from this size on have their checksum computed in parallel with decoding.
  static constexpr size_t k_parallel_crc_min_size = size_t{4} << 20;

  // Blobs handed to the checker at a time.
  static constexpr size_t k_blob_chunk = 2048;

  std::string_view m_file;
  uint64_t m_crc_prefix = 0;
  // Metadata opcodes seen since the last key, and the current database.
  int64_t m_expire_ms = -1;
  int64_t m_idle = -1;
  int m_freq = -1;
  uint64_t m_db = 0;
  std::future<uint64_t> m_crc_guess;
  std::optional<BlobChecker> m_checker;  // validate-only reads of big files
  std::vector<BlobTask> m_tasks;
  std::vector<BlobTask> m_skimmed;  // blobs of deferred values: checked when they are read
  Cursor m_c;
  RdbVisitor& m_visitor;
  const RdbReadOptions& m_options;
  RdbSummary m_summary;
};

}  // namespace

Expected<RdbSummary, RdbError> read_rdb(std::string_view file, RdbVisitor& visitor,
                                        const RdbReadOptions& options) {
  FileReader reader(file, visitor, options);
  return reader.run();
}

struct RdbStreamReader::Impl {
  Impl(RdbVisitor& visitor, const RdbReadOptions& opts)
      : options(opts), reader(std::string_view(), visitor, options) {
    options.parallel_check_min_bytes = SIZE_MAX;
  }

  /// Reads every whole record in the buffer; `last`: no more bytes will come.
  std::optional<RdbError> parse(bool last) {
    reader.set_data(buf, base, !last);
    Cursor& c = reader.cursor();
    size_t used = 0;
    std::optional<RdbError> error;
    if (!header_read) {
      if (reader.header()) {
        header_read = true;
        used = c.pos();
      } else if (c.short_of_data()) {
        want = c.need();
        return std::nullopt;
      } else {
        return c.take_error();
      }
    }
    while (!finished) {
      size_t at = c.pos();
      FileReader::Step step = reader.record();
      if (step == FileReader::Step::failed) {
        if (c.short_of_data()) {
          // Read again once the record can be whole, and not before the buffer has grown
          // by half: a record of many small parts is then read O(log n) times, not once a
          // part.
          uint64_t start = base + at;
          uint64_t held = base + buf.size() - start;
          want = std::max(c.need(), start + held + held / 2);
          c.rewind(at);
          break;
        }
        error = c.take_error();
        break;
      }
      used = c.pos();
      if (step == FileReader::Step::done) {
        finished = true;
      }
    }
    drop(used);
    return error;
  }

  void drop(size_t used) {
    if (used == 0) {
      return;
    }
    if (options.verify_checksum) {
      crc = crc64(crc, std::string_view(buf).substr(0, used));
      reader.set_crc_prefix(crc);
    }
    buf.erase(0, used);
    base += used;
  }

  RdbReadOptions options;
  FileReader reader;
  std::string buf;
  uint64_t base = 0;  // file offset of buf[0]
  uint64_t want = 0;  // read again once the buffer reaches this offset
  uint64_t crc = 0;   // of the bytes before `base`
  bool header_read = false;
  bool finished = false;
};

RdbStreamReader::RdbStreamReader(RdbVisitor& visitor, const RdbReadOptions& options)
    : m_impl(std::make_unique<Impl>(visitor, options)) {}

RdbStreamReader::~RdbStreamReader() = default;

Expected<bool, RdbError> RdbStreamReader::feed(std::string_view bytes) {
  Impl& s = *m_impl;
  if (s.finished) {
    return true;
  }
  s.buf.append(bytes);
  if (s.base + s.buf.size() < s.want) {
    return false;
  }
  if (auto error = s.parse(false)) {
    return Unexpected{std::move(*error)};
  }
  return s.finished;
}

Expected<RdbSummary, RdbError> RdbStreamReader::finish() {
  Impl& s = *m_impl;
  if (!s.finished) {
    if (auto error = s.parse(true)) {
      return Unexpected{std::move(*error)};
    }
  }
  if (!s.finished) {
    return Unexpected{RdbError{s.base, "the RDB ended early"}};
  }
  return s.reader.summary();
}

bool RdbStreamReader::done() const {
  return m_impl->finished;
}

uint64_t RdbStreamReader::offset() const {
  return m_impl->base;
}

const RdbSummary& RdbStreamReader::summary() const {
  return m_impl->reader.summary();
}

size_t RdbStreamReader::buffered() const {
  return m_impl->buf.size();
}

std::string_view RdbStreamReader::bytes_at(uint64_t offset, uint64_t length) const {
  const Impl& s = *m_impl;
  if (offset < s.base || offset - s.base + length > s.buf.size()) {
    return {};
  }
  return std::string_view(s.buf).substr(offset - s.base, length);
}

Expected<RdbValue, RdbError> decode_rdb_value(uint8_t type, std::string_view bytes,
                                              const RdbReadOptions& options, uint64_t base) {
  Cursor c(bytes, base);
  if (!rdb::is_object_type(type) && type != static_cast<uint8_t>(Type::valkey_hash_2) &&
      type != static_cast<uint8_t>(Type::valkey_path_hash)) {
    c.fail_at(base, "unknown value type " + std::to_string(type));
    return Unexpected{c.take_error()};
  }
  RdbValue v;
  ValueDecoder decoder(c, options);
  if (!decoder.decode(type, v)) {
    return Unexpected{c.take_error()};
  }
  if (c.remaining() != 0) {
    c.fail(std::to_string(c.remaining()) + " bytes left after the value");
    return Unexpected{c.take_error()};
  }
  return v;
}

Expected<RdbValue, RdbError> decode_dump_value(uint8_t on_disk, int version, std::string_view bytes,
                                               const RdbReadOptions& options) {
  int type = rdb::object_type_for_version(on_disk, version);
  if (type < 0) {
    return Unexpected{RdbError{0, "value type " + std::to_string(on_disk) +
                                      " does not exist in RDB version " + std::to_string(version)}};
  }
  // Valkey's restoreCommand reads the object from the whole payload and ignores what follows
  // it, the footer included: the value need not fill `bytes`.
  Cursor c(bytes, 0);
  RdbValue v;
  ValueDecoder decoder(c, options);
  if (!decoder.decode(static_cast<uint8_t>(type), v)) {
    return Unexpected{c.take_error()};
  }
  return v;
}

struct RdbElementReader::State {
  State(std::string_view bytes, uint64_t base, const RdbReadOptions& given)
      : options(materialized(given)), c(bytes, base), decoder(c, options) {}
  static RdbReadOptions materialized(RdbReadOptions o) {
    o.materialize = true;
    o.keep_blocks = false;
    return o;
  }
  RdbReadOptions options;
  Cursor c;
  ValueDecoder decoder;
  ElementWalk walk;
  bool walked = false;
  bool head_taken = false;  // a walked value's first batch carries what walk_begin read
  RdbValue head;            // walked: the first batch; whole: the value, handed out in slices
  size_t taken = 0;         // whole values: elements handed out so far
};

RdbElementReader::RdbElementReader(uint8_t type, std::string_view bytes, uint64_t base,
                                   const RdbReadOptions& options)
    : m_state(std::make_unique<State>(bytes, base, options)) {
  State& s = *m_state;
  if (!rdb::is_object_type(type) && type != static_cast<uint8_t>(Type::valkey_hash_2) &&
      type != static_cast<uint8_t>(Type::valkey_path_hash)) {
    s.c.fail_at(base, "unknown value type " + std::to_string(type));
    return;
  }
  s.walked = ValueDecoder::walks_elements(type);
  if (ValueDecoder::is_stream(type)) {
    // The groups come after the entries: a first pass, a node at a time, reads them (and
    // checks the whole value) before any entry is handed out.
    RdbReadOptions light = s.options;
    light.materialize = false;
    light.keep_streams = false;
    Cursor first(bytes, base);
    ValueDecoder pre(first, light);
    RdbValue tail;
    if (!pre.decode(type, tail)) {
      s.c.fail_at(first.error().offset, first.error().message);
      return;
    }
    m_stream_tail = std::make_unique<RdbStream>(std::move(tail.stream));
  }
  bool ok = s.walked ? s.decoder.walk_begin(type, s.walk, s.head) : s.decoder.decode(type, s.head);
  if (ok && (!s.walked || s.walk.left == 0) && s.c.remaining() != 0) {
    s.c.fail(std::to_string(s.c.remaining()) + " bytes left after the value");
  }
  m_kind = s.head.kind;
}

RdbElementReader::~RdbElementReader() = default;
RdbElementReader::RdbElementReader(RdbElementReader&&) noexcept = default;
RdbElementReader& RdbElementReader::operator=(RdbElementReader&&) noexcept = default;

namespace {

/// Moves up to `n` elements of `from` starting at `at` into `to` (same kind).
size_t take_slice(RdbValue& from, size_t at, size_t max_bytes, RdbValue& to) {
  size_t bytes = 0;
  size_t n = 0;
  auto room = [&](size_t more) {
    bytes += more + 16;
    ++n;
    return bytes < max_bytes;
  };
  switch (from.kind) {
    case RdbKind::list:
    case RdbKind::set:
      for (size_t i = at; i < from.items.size(); ++i) {
        to.items.push_back(std::move(from.items[i]));
        if (!room(to.items.back().size())) {
          break;
        }
      }
      break;
    case RdbKind::zset:
      for (size_t i = at; i < from.zset.size(); ++i) {
        to.zset.push_back(std::move(from.zset[i]));
        if (!room(to.zset.back().first.size() + 8)) {
          break;
        }
      }
      break;
    case RdbKind::hash:
      for (size_t i = at; i < from.hash.size(); ++i) {
        to.hash.push_back(std::move(from.hash[i]));
        if (!room(to.hash.back().field.size() + to.hash.back().value.size())) {
          break;
        }
      }
      break;
    case RdbKind::stream:
      for (size_t i = at; i < from.stream.entries.size(); ++i) {
        to.stream.entries.push_back(std::move(from.stream.entries[i]));
        size_t size = 0;
        for (const auto& [f, v] : to.stream.entries.back().fields) {
          size += f.size() + v.size();
        }
        if (!room(size)) {
          break;
        }
      }
      break;
    default:
      break;
  }
  return n;
}

/// The element count of a whole value's kind.
size_t element_count(const RdbValue& v) {
  switch (v.kind) {
    case RdbKind::list:
    case RdbKind::set:
      return v.items.size();
    case RdbKind::zset:
      return v.zset.size();
    case RdbKind::hash:
      return v.hash.size();
    case RdbKind::stream:
      return v.stream.entries.size();
    default:
      return 0;
  }
}

}  // namespace

Expected<bool, RdbError> RdbElementReader::next(RdbValue& batch, size_t max_bytes) {
  State& s = *m_state;
  if (s.c.failed()) {
    return Unexpected{s.c.error()};
  }
  batch = RdbValue{};
  batch.kind = s.head.kind;
  batch.rdb_type = s.head.rdb_type;
  if (!s.walked) {
    if (element_count(s.head) == 0 && s.taken == 0) {
      // Strings, modules, path hashes, empty streams: the whole value in one batch.
      batch = std::move(s.head);
      s.taken = 1;
      return false;
    }
    s.taken += take_slice(s.head, s.taken, max_bytes, batch);
    return s.taken < element_count(s.head);
  }
  if (!s.head_taken) {
    s.head_taken = true;
    if (s.walk.left == 0) {
      batch = std::move(s.head);
      return false;
    }
  }
  size_t bytes = 0;
  while (s.walk.left > 0 && bytes < max_bytes) {
    if (!s.decoder.walk_next(s.walk, batch, bytes)) {
      return Unexpected{s.c.error()};
    }
  }
  if (s.walk.left > 0) {
    return true;
  }
  if (s.c.remaining() != 0) {
    s.c.fail(std::to_string(s.c.remaining()) + " bytes left after the value");
    return Unexpected{s.c.error()};
  }
  return false;
}

std::string_view rdb_kind_name(RdbKind kind) {
  switch (kind) {
    case RdbKind::string:
      return "string";
    case RdbKind::list:
      return "list";
    case RdbKind::set:
      return "set";
    case RdbKind::zset:
      return "zset";
    case RdbKind::hash:
      return "hash";
    case RdbKind::stream:
      return "stream";
    case RdbKind::module:
      return "module";
    case RdbKind::path_hash:
      return "pathhash";
  }
  return "unknown";
}

RdbKind kind_of_object_type(uint8_t type) {
  using rdb::Type;
  switch (static_cast<Type>(type)) {
    case Type::string:
      return RdbKind::string;
    case Type::list:
    case Type::list_ziplist:
    case Type::list_quicklist:
    case Type::list_quicklist_2:
      return RdbKind::list;
    case Type::set:
    case Type::set_intset:
    case Type::set_listpack:
      return RdbKind::set;
    case Type::zset:
    case Type::zset_2:
    case Type::zset_ziplist:
    case Type::zset_listpack:
      return RdbKind::zset;
    case Type::hash:
    case Type::hash_zipmap:
    case Type::hash_ziplist:
    case Type::hash_listpack:
    case Type::hash_metadata_pre_ga:
    case Type::hash_listpack_ex_pre_ga:
    case Type::hash_metadata:
    case Type::hash_listpack_ex:
    case Type::valkey_hash_2:
      return RdbKind::hash;
    case Type::stream_listpacks:
    case Type::stream_listpacks_2:
    case Type::stream_listpacks_3:
      return RdbKind::stream;
    case Type::valkey_path_hash:
      return RdbKind::path_hash;
    case Type::module_pre_ga:
    case Type::module_2:
      break;
  }
  return RdbKind::module;
}

}  // namespace keyshift::engine

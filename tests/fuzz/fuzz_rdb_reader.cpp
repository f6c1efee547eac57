// libFuzzer target for the RDB reader: any byte string must be read or refused with an
// offset, never crash, hang or allocate without bound. Built by tests/fuzz/fuzz.sh with
// clang -fsanitize=fuzzer,address,undefined.
#include "engine/persistence/rdb_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

class Discard : public keyshift::engine::RdbVisitor {
 public:
  bool on_key(keyshift::engine::RdbKey& key) override {
    m_keys += key.key.size() != static_cast<size_t>(-1) ? 1 : 0;
    return true;
  }

 private:
  size_t m_keys = 0;
};

/// Defers every other value, as a threaded load does, and reads it back from the file:
/// a value stepped over without its blobs being checked must still be refused cleanly.
class DeferHalf : public keyshift::engine::RdbVisitor {
 public:
  DeferHalf(std::string_view file, const keyshift::engine::RdbReadOptions& options)
      : m_file(file), m_options(options) {}
  bool defer_value(uint8_t) override { return (m_seen++ % 2) == 0; }
  bool on_key(keyshift::engine::RdbKey& key) override {
    if (key.deferred) {
      auto value = keyshift::engine::decode_rdb_value(
          key.value.rdb_type, m_file.substr(key.value_offset, key.value_bytes), m_options,
          key.value_offset);
      if (!value && value.error().offset > m_file.size()) {
        __builtin_trap();
      }
    }
    return true;
  }

 private:
  std::string_view m_file;
  const keyshift::engine::RdbReadOptions& m_options;
  size_t m_seen = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Discard visitor;
  keyshift::engine::RdbReadOptions options;
  options.skip_modules = true;
  auto whole = keyshift::engine::read_rdb(bytes, visitor, options);
  if (!whole && whole.error().offset > size) {
    __builtin_trap();  // an error must point inside the input
  }
  // Again with values deferred and read back (materialized, as a load reads them).
  keyshift::engine::RdbReadOptions load_options = options;
  load_options.keep_blocks = true;
  DeferHalf deferring(bytes, load_options);
  (void)keyshift::engine::read_rdb(bytes, deferring, load_options);
  // Also as a DUMP payload body: the first byte picks the value type.
  if (size > 0) {
    (void)keyshift::engine::decode_rdb_value(data[0], bytes.substr(1), options);
    // And under Valkey 9.2's numbering, where 22 and 23 are HASH_2 and the Path Hash.
    (void)keyshift::engine::decode_dump_value(data[0], 81, bytes.substr(1), options);
  }
  return 0;
}

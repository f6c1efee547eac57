#pragma once

// Access to a collection stored in an Entry whatever holds it. A small hash, set or sorted
// set keeps its listpack/intset block straight in the entry's value slot (Entry::Kind::blob)
// and pays no C++ object; a large one is a heap object (Entry::Kind::object).

#include "engine/keyspace/entry.hpp"
#include "engine/keyspace/object.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace keyshift::engine {

/// The value of type `V` (HashValue, SetValue) in an Entry. A blob is lent to a `V` built
/// on the stack around the entry's block; an object is used in place. Every change through
/// it must be followed by `sync()` before the entry is used otherwise (removed, copied,
/// saved): sync writes a reallocated block back, or moves a value that left its small
/// encodings into its own object and switches the entry to Kind::object in place.
///
/// `V` provides: a borrowing constructor `V(ObjEncoding, uint64_t seed, uint8_t* block)`,
/// `block()`, `release_block()`, `block_bytes()`, `detach()` (a heap `V` taking over a
/// large value) and `static is_blob_encoding(ObjEncoding)`.
template <typename V>
class ValueRef {
 public:
  /// The value in `e`; `seed` seeds its hashtable should it convert.
  ValueRef(Entry* e, uint64_t seed) : m_entry(e) {
    if (e->kind() == Entry::Kind::blob) {
      m_value = &m_borrowed.emplace(e->encoding(), seed, e->blob());
    } else {
      m_value = static_cast<V*>(e->object());
    }
  }
  /// Read-only access to the value in `e` (no sync needed, none allowed).
  explicit ValueRef(const Entry* e) : ValueRef(const_cast<Entry*>(e), 0) {}
  ~ValueRef() {
    if (m_borrowed) {
      // The block belongs to the entry (or went with it): hand it back, never free it.
      m_borrowed->release_block();
    }
  }
  ValueRef(const ValueRef&) = delete;
  ValueRef& operator=(const ValueRef&) = delete;

  V* operator->() const { return m_value; }
  V& operator*() const { return *m_value; }
  /// Bytes the value holds besides the entry: the block, or the heap object.
  size_t bytes() const { return m_borrowed ? m_borrowed->block_bytes() : m_value->bytes(); }
  /// Stores the result of a change back into the entry (see the class comment).
  void sync() {
    if (!m_borrowed) {
      m_entry->set_encoding(m_value->encoding());
      return;
    }
    if (V::is_blob_encoding(m_borrowed->encoding())) {
      m_entry->set_blob(m_borrowed->block());
      m_entry->set_encoding(m_borrowed->encoding());
      return;
    }
    V* v = m_borrowed->detach();
    m_entry->switch_slot(Entry::Kind::object, v, v->encoding());
    m_borrowed.reset();
    m_value = v;
  }

 private:
  Entry* m_entry;
  std::optional<V> m_borrowed;  // a small value over the entry's block
  V* m_value;
};

/// The ValueSpec storing `v` (owned): its bare block when its encoding allows one (then
/// `v` is freed), else the object itself.
template <typename V>
Entry::ValueSpec value_spec(V* v, ObjType type) {
  Entry::ValueSpec spec;
  spec.type = type;
  spec.encoding = v->encoding();
  if (V::is_blob_encoding(v->encoding())) {
    spec.kind = Entry::Kind::blob;
    spec.blob = v->block();
    v->release_block();
    delete v;
  } else {
    spec.kind = Entry::Kind::object;
    spec.object = v;
  }
  return spec;
}

}  // namespace keyshift::engine

#pragma once

// The list value: a single listpack while small (OBJECT ENCODING "listpack"), a quicklist
// once it outgrows list-max-listpack-size ("quicklist"), and a listpack again when it
// shrinks to one packed node of at most half the limit (Valkey 8's conversion rules).

#include "engine/ds/listpack.hpp"
#include "engine/ds/quicklist.hpp"
#include "engine/keyspace/digest.hpp"
#include "engine/keyspace/object.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// An end of a list: Valkey's LIST_HEAD / LIST_TAIL, "LEFT" / "RIGHT" in commands.
enum class ListSide : uint8_t { head, tail };

/// The settings a list consults when it changes encoding.
struct ListLimits {
  int fill = -2;           // list-max-listpack-size
  int compress_depth = 0;  // list-compress-depth
};

class ListValue final : public HeapObject {
 public:
  /// An empty list (listpack encoded); callers never store an empty list in a key.
  ListValue() = default;
  /// A list over an existing listpack (RDB loading); call convert_auto afterwards.
  explicit ListValue(Listpack&& lp) : m_lp(std::move(lp)) {}
  /// A list over an existing quicklist (RDB loading); call convert_auto afterwards.
  explicit ListValue(std::unique_ptr<Quicklist> ql) : m_ql(std::move(ql)) {}

  /// Bytes held (O(1)).
  size_t bytes() const override;
  HeapObject* clone() const override;

  /// ObjEncoding::listpack or ObjEncoding::quicklist.
  ObjEncoding encoding() const { return m_ql ? ObjEncoding::quicklist : ObjEncoding::listpack; }
  /// Number of elements.
  size_t size() const { return m_ql ? m_ql->size() : m_lp.size(); }
  bool empty() const { return size() == 0; }
  /// The listpack (listpack encoding only) / the quicklist (quicklist encoding only).
  const Listpack& listpack() const { return m_lp; }
  const Quicklist* quicklist() const { return m_ql.get(); }

  // --- Encoding conversion (Valkey's listTypeTryConversion*) ---------------------------
  /// Before adding `add_count` elements of `add_bytes` total length: converts a listpack
  /// that would break the limit to a quicklist.
  void prepare_growth(const ListLimits& limits, size_t add_bytes, size_t add_count);
  /// After removing elements: converts a quicklist back when it is one packed node within
  /// half the limit.
  void after_shrink(const ListLimits& limits) { try_to_listpack(limits, true); }
  /// After building a list wholesale (SORT STORE, RDB): picks the fitting encoding.
  void convert_auto(const ListLimits& limits);

  // --- Element operations (call prepare_growth first when adding) ----------------------
  /// Adds an element at `side`.
  void push(ListSide side, std::string_view value);
  /// Removes the element at `side` into `out`; false when empty.
  bool pop(ListSide side, std::string& out);
  /// The element at `index` (negative from the tail), or nullopt.
  std::optional<std::string> at(int64_t index) const;
  /// Replaces the element at `index`; false when out of range.
  bool set(int64_t index, std::string_view value);
  /// Inserts `value` before/after the first element equal to `pivot`; false if none.
  bool insert(std::string_view pivot, std::string_view value, bool after);
  /// Removes elements equal to `value`: the first `count` from the head (count > 0), the
  /// last -count from the tail (count < 0), or all (0). Returns how many.
  size_t remove(std::string_view value, int64_t count);
  /// Removes `count` elements from `start` (negative from the tail), clamped.
  void del_range(int64_t start, int64_t count);

  /// Reads elements from a position toward the tail (`forward`) or the head. Invalidated by
  /// any change to the list.
  class Reader {
   public:
    Reader(const ListValue& list, int64_t index, bool forward);
    bool valid() const;
    /// The current element (strings view the list or the reader's buffer).
    LpValue value() const;
    void advance();

   private:
    const Listpack* m_lp = nullptr;
    Listpack::Pos m_pos = Listpack::k_none;
    bool m_forward = true;
    std::optional<Quicklist::Cursor> m_cursor;
  };

  /// Calls `fn(LpValue)` for every element, head to tail.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (Reader r(*this, 0, true); r.valid(); r.advance()) {
      fn(r.value());
    }
  }

 private:
  void try_to_listpack(const ListLimits& limits, bool shrinking);

  Listpack m_lp;                    // listpack encoding
  std::unique_ptr<Quicklist> m_ql;  // quicklist encoding when set
};

/// DEBUG DIGEST-VALUE of a list (elements head to tail).
Digest digest_list(const ListValue& list, bool has_expire, const Digest& seed = {});

}  // namespace keyshift::engine

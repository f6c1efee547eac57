#pragma once

#include "engine/util/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string_view>
#include <utility>

namespace keyshift::engine {

/// A chained hash table of intrusive nodes with incremental rehashing and a SCAN cursor
/// that survives growth and shrinking (the reverse-binary cursor of Valkey's dict).
///
/// `Traits` provides `static Node*& next(Node*)`, `static std::string_view key(const Node*)`
/// and `static uint64_t hash(std::string_view, uint64_t seed)`. Nodes are owned by the
/// caller; the table only links them.
template <typename Node, typename Traits>
class ChainedTable {
 public:
  explicit ChainedTable(MemoryCounter& mem, uint64_t seed) : m_mem(&mem), m_seed(seed) {}
  ~ChainedTable() {
    release(m_t[0]);
    release(m_t[1]);
  }
  ChainedTable(const ChainedTable&) = delete;
  ChainedTable& operator=(const ChainedTable&) = delete;

  /// Number of nodes.
  size_t size() const { return m_t[0].used + m_t[1].used; }
  /// Number of buckets of both tables (for INFO and memory figures).
  size_t buckets() const { return m_t[0].size + m_t[1].size; }
  /// True while a resize is in progress.
  bool rehashing() const { return m_rehash_idx >= 0; }
  /// Hash of `key` with this table's seed.
  uint64_t hash(std::string_view key) const { return Traits::hash(key, m_seed); }

  /// The link pointing at the node with `key` (so callers can replace or unlink it),
  /// or nullptr. Performs one rehash step.
  Node** find_link(std::string_view key, uint64_t h) {
    step();
    for (int t = 0; t <= (rehashing() ? 1 : 0); ++t) {
      if (m_t[t].size == 0) {
        continue;
      }
      Node** link = &m_t[t].buckets[h & (m_t[t].size - 1)];
      while (*link != nullptr) {
        if (Traits::key(*link) == key) {
          return link;
        }
        link = &Traits::next(*link);
      }
      if (!rehashing()) {
        break;
      }
    }
    return nullptr;
  }

  /// Finds the node with `key`, or nullptr. Unlike find_link it never moves a resize on:
  /// reads must not change the table's memory, which values report to the engine.
  Node* find(std::string_view key) const {
    uint64_t h = hash(key);
    for (int t = 0; t <= (rehashing() ? 1 : 0); ++t) {
      if (m_t[t].size == 0) {
        continue;
      }
      for (Node* n = m_t[t].buckets[h & (m_t[t].size - 1)]; n != nullptr; n = Traits::next(n)) {
        if (Traits::key(n) == key) {
          return n;
        }
      }
    }
    return nullptr;
  }

  /// Links `node` (whose key must not be present) with hash `h`.
  void insert(Node* node, uint64_t h) {
    step();
    grow_if_needed();
    Table& t = rehashing() ? m_t[1] : m_t[0];
    Node*& head = t.buckets[h & (t.size - 1)];
    Traits::next(node) = head;
    head = node;
    ++t.used;
  }

  /// Unlinks the node at `link` (from `find_link`) and returns it.
  Node* unlink(Node** link) {
    Node* node = *link;
    bool second = owner_is_second(node);
    *link = Traits::next(node);
    Traits::next(node) = nullptr;
    --m_t[second ? 1 : 0].used;
    shrink_if_needed();
    return node;
  }

  /// Replaces the node at `link` with `replacement` (same key).
  void replace(Node** link, Node* replacement) {
    Traits::next(replacement) = Traits::next(*link);
    *link = replacement;
  }

  /// Calls `fn(Node*)` for every node in the buckets the cursor covers and returns the
  /// next cursor (0 when done). Nodes must not be added or removed inside `fn`.
  template <typename Fn>
  uint64_t scan(uint64_t cursor, Fn&& fn) {
    if (size() == 0) {
      return 0;
    }
    uint64_t v = cursor;
    if (!rehashing()) {
      uint64_t m0 = m_t[0].size - 1;
      emit(m_t[0], v & m0, fn);
      v |= ~m0;
      v = next_cursor(v);
    } else {
      const Table* small = &m_t[0];
      const Table* large = &m_t[1];
      if (small->size > large->size) {
        std::swap(small, large);
      }
      uint64_t m0 = small->size - 1;
      uint64_t m1 = large->size - 1;
      if (small->size != 0) {
        emit(*small, v & m0, fn);
      }
      do {
        emit(*large, v & m1, fn);
        v |= ~m1;
        v = next_cursor(v);
      } while ((v & (m0 ^ m1)) != 0);
    }
    return v;
  }

  /// A node chosen at random, or nullptr. Picking a bucket and then a chain position would
  /// favour nodes in short chains, so a slot (bucket, position < k_fair_chain) is drawn and
  /// retried when empty: every node in a chain no longer than k_fair_chain is equally likely.
  /// Leaves an ongoing resize alone, as find does.
  template <typename Rng>
  Node* random(Rng& rng) {
    if (size() == 0) {
      return nullptr;
    }
    constexpr size_t k_fair_chain = 8;
    Node* fallback = nullptr;
    for (int tries = 0; tries < 100000; ++tries) {
      Node* head = nullptr;
      if (rehashing()) {
        // Buckets below the rehash index in the old table are empty.
        uint64_t total = m_t[0].size + m_t[1].size - static_cast<uint64_t>(m_rehash_idx);
        uint64_t r = static_cast<uint64_t>(m_rehash_idx) + rng() % total;
        head = r < m_t[0].size ? m_t[0].buckets[r] : m_t[1].buckets[r - m_t[0].size];
      } else {
        head = m_t[0].buckets[rng() % m_t[0].size];
      }
      if (head == nullptr) {
        continue;
      }
      size_t len = 0;
      for (Node* n = head; n != nullptr; n = Traits::next(n)) {
        ++len;
      }
      size_t bound = len > k_fair_chain ? len : k_fair_chain;
      size_t pick = rng() % bound;
      if (pick >= len) {
        fallback = head;
        continue;
      }
      Node* n = head;
      while (pick-- > 0) {
        n = Traits::next(n);
      }
      return n;
    }
    return fallback;
  }

  /// Calls `fn(Node*)` for every node; `fn` may not modify the table.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Table& t : m_t) {
      for (size_t i = 0; i < t.size; ++i) {
        for (Node* n = t.buckets[i]; n != nullptr;) {
          Node* next = Traits::next(n);
          fn(n);
          n = next;
        }
      }
    }
  }

  /// Unlinks every node, calling `fn(Node*)` on each (to free it), and drops the buckets.
  template <typename Fn>
  void clear(Fn&& fn) {
    for (Table& t : m_t) {
      for (size_t i = 0; i < t.size; ++i) {
        for (Node* n = t.buckets[i]; n != nullptr;) {
          Node* next = Traits::next(n);
          fn(n);
          n = next;
        }
      }
      release(t);
    }
    m_rehash_idx = -1;
  }

  /// Does up to `n` bucket moves of an ongoing resize; returns true if more remain.
  bool rehash(size_t n) {
    if (!rehashing()) {
      return false;
    }
    size_t empty_visits = n * 10;
    while (n-- > 0 && m_t[0].used != 0) {
      while (m_t[0].buckets[m_rehash_idx] == nullptr) {
        ++m_rehash_idx;
        if (--empty_visits == 0) {
          return true;
        }
      }
      Node* node = m_t[0].buckets[m_rehash_idx];
      while (node != nullptr) {
        Node* next = Traits::next(node);
        Node*& head = m_t[1].buckets[hash(Traits::key(node)) & (m_t[1].size - 1)];
        Traits::next(node) = head;
        head = node;
        --m_t[0].used;
        ++m_t[1].used;
        node = next;
      }
      m_t[0].buckets[m_rehash_idx] = nullptr;
      ++m_rehash_idx;
    }
    if (m_t[0].used == 0) {
      release(m_t[0]);
      m_t[0] = m_t[1];
      m_t[1] = Table{};
      m_rehash_idx = -1;
      return false;
    }
    return true;
  }

  /// Sizes an empty table for `n` nodes up front (RDB loading's RESIZEDB hint), so that
  /// filling it rehashes nothing.
  void reserve(size_t n) {
    if (size() == 0 && !rehashing() && n > m_t[0].size) {
      release(m_t[0]);
      resize(n);
    }
  }

  /// Shrinks the buckets if the table became sparse (called after mass deletion).
  void shrink_if_needed() {
    if (rehashing() || m_t[0].size <= k_initial_size) {
      return;
    }
    if (m_t[0].used * 8 < m_t[0].size) {
      resize(m_t[0].used);
    }
  }

  /// Exchanges contents with `other` (both must count into the same MemoryCounter).
  void swap(ChainedTable& other) {
    std::swap(m_t, other.m_t);
    std::swap(m_seed, other.m_seed);
    std::swap(m_rehash_idx, other.m_rehash_idx);
  }

  /// Pauses automatic resizing (while a snapshot iterates the table).
  void set_rehash_paused(bool paused) { m_paused = paused; }

 private:
  struct Table {
    Node** buckets = nullptr;
    size_t size = 0;
    size_t used = 0;
  };
  static constexpr size_t k_initial_size = 4;

  static uint64_t next_cursor(uint64_t v) {
    v = reverse_bits(v);
    ++v;
    return reverse_bits(v);
  }
  static uint64_t reverse_bits(uint64_t v) {
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
    return __builtin_bswap64(v);
  }

  template <typename Fn>
  static void emit(const Table& t, uint64_t idx, Fn& fn) {
    for (Node* n = t.buckets[idx]; n != nullptr; n = Traits::next(n)) {
      fn(n);
    }
  }

  // During a resize a node is in the new table once its old bucket was moved, and also when
  // it was inserted after the resize began (inserts go to the new table), so a bucket not
  // yet moved is searched. Must be called while the node is still linked.
  bool owner_is_second(Node* node) {
    if (!rehashing()) {
      return false;
    }
    uint64_t h = hash(Traits::key(node));
    size_t idx0 = h & (m_t[0].size - 1);
    if (static_cast<int64_t>(idx0) < m_rehash_idx) {
      return true;
    }
    for (Node* n = m_t[0].buckets[idx0]; n != nullptr; n = Traits::next(n)) {
      if (n == node) {
        return false;
      }
    }
    return true;
  }

  void step() {
    if (rehashing() && !m_paused) {
      rehash(1);
    }
  }

  void grow_if_needed() {
    if (rehashing()) {
      return;
    }
    if (m_t[0].size == 0) {
      resize(k_initial_size);
      return;
    }
    if (m_t[0].used >= m_t[0].size && !m_paused) {
      resize(m_t[0].used + 1);
    } else if (m_t[0].used >= m_t[0].size * 4) {
      resize(m_t[0].used + 1);
    }
  }

  void resize(size_t wanted) {
    size_t size = k_initial_size;
    while (size < wanted) {
      size *= 2;
    }
    if (size == m_t[0].size) {
      return;
    }
    Table t;
    t.size = size;
    t.buckets = static_cast<Node**>(m_mem->allocate(size * sizeof(Node*)));
    for (size_t i = 0; i < size; ++i) {
      t.buckets[i] = nullptr;
    }
    if (m_t[0].size == 0) {
      m_t[0] = t;
      return;
    }
    m_t[1] = t;
    m_rehash_idx = 0;
  }

  void release(Table& t) {
    if (t.buckets != nullptr) {
      m_mem->deallocate(t.buckets);
    }
    t = Table{};
  }

  MemoryCounter* m_mem;
  uint64_t m_seed;
  Table m_t[2];
  int64_t m_rehash_idx = -1;
  bool m_paused = false;
};

}  // namespace keyshift::engine

#pragma once

// A quicklist as Valkey 8 builds it: a doubly linked list of nodes, each a listpack
// (PACKED) or one large element on its own (PLAIN), bounded by list-max-listpack-size
// (`fill`: -1..-5 = 4/8/16/32/64 KB per node, positive = entries per node with an 8 KB
// safety cap). Nodes deeper than list-compress-depth from both ends are LZF-compressed
// when that saves at least 8 bytes. Node splits and merges follow Valkey so that the node
// layout (which decides when a list converts back to a listpack) matches.

#include "engine/ds/listpack.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace keyshift::engine {

class Quicklist {
 public:
  /// Node containers, numbered as Valkey's QUICKLIST_NODE_CONTAINER_* (RDB uses them).
  enum class Container : uint8_t { plain = 1, packed = 2 };

  /// One node. Read-only to users; the quicklist owns and edits nodes.
  class Node {
   public:
    Container container() const { return m_container; }
    bool is_plain() const { return m_container == Container::plain; }
    /// True when the node's bytes are held LZF-compressed.
    bool compressed() const { return m_compressed; }
    /// Elements in the node (1 for a plain node).
    size_t count() const { return m_count; }
    /// Uncompressed size: listpack bytes, or the plain element's length.
    size_t sz() const { return m_sz; }
    Node* next() const { return m_next; }
    Node* prev() const { return m_prev; }
    /// The LZF bytes (compressed() only).
    std::string_view lzf() const { return m_blob; }
    /// The uncompressed bytes: the listpack blob or the plain element, decompressing into
    /// `scratch` when needed.
    std::string_view raw(std::string& scratch) const;

   private:
    friend class Quicklist;
    Node* m_prev = nullptr;
    Node* m_next = nullptr;
    std::optional<Listpack> m_lp;  // packed and not compressed
    std::string m_blob;            // plain element, or LZF bytes when compressed
    size_t m_sz = 0;
    uint32_t m_count = 0;
    Container m_container = Container::packed;
    bool m_compressed = false;
    bool m_recompress = false;     // decompressed for use; compress again afterwards
    bool m_dont_compress = false;  // temporarily pinned during a replace
  };

  /// A position: a node and an element offset (0-based) inside it.
  struct Location {
    Node* node = nullptr;
    size_t offset = 0;
    explicit operator bool() const { return node != nullptr; }
  };

  /// Reads elements in order from a position without changing the list (compressed nodes
  /// are decompressed into the cursor). Invalidated by any mutation.
  class Cursor {
   public:
    /// A cursor at element `index` (negative from the tail) moving toward the tail
    /// (`forward`) or the head.
    Cursor(const Quicklist& ql, int64_t index, bool forward);
    /// True while positioned on an element.
    bool valid() const { return m_node != nullptr; }
    /// The current element (strings view the list or the cursor's buffer).
    LpValue value() const;
    /// Moves one element in the cursor's direction.
    void advance();
    /// The current position (for mutations that follow a search).
    Location location() const { return {const_cast<Node*>(m_node), m_offset}; }

   private:
    void enter(const Node* node, bool from_start);
    const Node* m_node = nullptr;
    size_t m_offset = 0;
    bool m_forward;
    const Listpack* m_lp = nullptr;
    Listpack::Pos m_pos = Listpack::k_none;
    std::optional<Listpack> m_scratch;
    std::string m_plain_scratch;
  };

  /// An empty quicklist with list-max-listpack-size `fill` and list-compress-depth `depth`.
  Quicklist(int fill, int compress_depth);
  ~Quicklist();
  Quicklist(const Quicklist&) = delete;
  Quicklist& operator=(const Quicklist&) = delete;
  /// A deep copy (COPY).
  std::unique_ptr<Quicklist> clone() const;

  /// Elements (O(1)).
  size_t size() const { return m_count; }
  /// Nodes (O(1)).
  size_t node_count() const { return m_len; }
  int fill() const { return m_fill; }
  int compress_depth() const { return m_compress; }
  Node* head() const { return m_head; }
  Node* tail() const { return m_tail; }
  /// Memory held by the nodes and their data, excluding this object (O(1), tracked).
  size_t bytes() const { return m_bytes; }

  /// Adds an element at the head / tail.
  void push_head(std::string_view value);
  void push_tail(std::string_view value);
  /// Removes the head / tail element into `out`; false when empty.
  bool pop_head(std::string& out);
  bool pop_tail(std::string& out);
  /// Appends a whole listpack as a new tail node (conversion, RDB loading); empty ones are
  /// dropped.
  void append_listpack(Listpack&& lp);
  /// Appends a plain node holding `element` (RDB loading).
  void append_plain(std::string_view element);
  /// Takes the listpack out of the only packed node, leaving the quicklist empty
  /// (conversion back to a listpack). Requires node_count() == 1 and a packed head.
  Listpack take_single_listpack();

  /// The position of element `index` (negative from the tail), or an empty location.
  Location locate(int64_t index) const;
  /// The element at a position (copied, since compressed nodes are decoded on the fly).
  std::string get(Location loc) const;
  /// Inserts `value` before / after the element at `loc`.
  void insert(Location loc, bool after, std::string_view value);
  /// Replaces the element at `loc`.
  void replace(Location loc, std::string_view value);
  /// Replaces element `index`; false when out of range.
  bool replace_at(int64_t index, std::string_view value);
  /// Removes the element at `loc`; returns the position of the next element in the
  /// direction of travel (`forward`: toward the tail), or an empty location.
  Location erase(Location loc, bool forward);
  /// Removes `count` elements starting at `start` (negative from the tail), clamped.
  void del_range(int64_t start, int64_t count);
  /// Removes elements whose text equals `value`, scanning from the head (or the tail when
  /// `from_tail`), at most `limit` of them (0: all); returns how many were removed (LREM).
  size_t remove_equal(std::string_view value, size_t limit, bool from_tail);

  /// Checks the structure (links, counts, limits, raw head and tail, tracked bytes); on a
  /// problem returns false and describes it in `why` (tests and DEBUG use).
  bool check(std::string* why = nullptr) const;

  /// True when an element of `sz` bytes gets a PLAIN node of its own under `fill`: when it
  /// exceeds the fill's byte limit (8 KB for positive fills).
  static bool is_large_element(size_t sz, int fill);
  /// The byte and count limits a node (or a list listpack) has under `fill`.
  static void node_limit(int fill, size_t& size_limit, size_t& count_limit);
  /// True when a node of `new_sz` bytes and `new_count` elements breaks the limit.
  static bool exceeds_limit(int fill, size_t new_sz, size_t new_count);

 private:
  Node* new_packed_node(std::string_view first);
  Node* new_plain_node(std::string_view element);
  static size_t node_bytes(const Node* n);
  void account(const Node* n, bool add);
  void free_node(Node* n);
  bool allow_insert(const Node* n, size_t sz) const;
  bool allow_merge(const Node* a, const Node* b) const;
  void insert_node(Node* old_node, Node* new_node, bool after);
  void del_node(Node* n);
  bool del_index(Node* n, size_t offset);
  void insert_plain(Node* old_node, std::string_view value, bool after);
  Node* split_node(Node* n, size_t offset, bool after);
  Node* merge_pair(Node* a, Node* b);
  Node* merge_around(Node* center);
  void update_sz(Node* n);
  // Compression, as Valkey: interior nodes beyond `m_compress` from each end.
  bool compress_node(Node* n);
  void decompress_node(Node* n);
  void decompress_for_use(Node* n);
  void recompress_only(Node* n);
  void compress(Node* n);
  void compress_around(Node* n);

  Node* m_head = nullptr;
  Node* m_tail = nullptr;
  size_t m_count = 0;
  size_t m_len = 0;
  size_t m_bytes = 0;
  int m_fill;
  int m_compress;
};

}  // namespace keyshift::engine

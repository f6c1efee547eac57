#include "engine/ds/quicklist.hpp"

#include "engine/ds/lzf.hpp"

#include <cassert>
#include <cstdint>
#include <vector>

namespace keyshift::engine {
namespace {

/// Byte limits of negative fills -1..-5.
constexpr size_t k_fill_bytes[] = {4096, 8192, 16384, 32768, 65536};
/// Byte cap of a node when the fill counts entries, and the size above which an element
/// gets a plain node under such a fill.
constexpr size_t k_size_safety_limit = 8192;
/// Over-estimate of one entry's listpack overhead when checking room for it.
constexpr size_t k_entry_overhead_estimate = 8;
/// Nodes smaller than this are not worth compressing.
constexpr size_t k_min_compress_bytes = 48;
/// Compression must save at least this many bytes to be kept.
constexpr size_t k_min_compress_improve = 8;

size_t negative_fill_limit(int fill) {
  size_t offset = static_cast<size_t>(-static_cast<int64_t>(fill)) - 1;
  constexpr size_t levels = sizeof(k_fill_bytes) / sizeof(k_fill_bytes[0]);
  return k_fill_bytes[offset < levels ? offset : levels - 1];
}

}  // namespace

// --- Limits -------------------------------------------------------------------------------

void Quicklist::node_limit(int fill, size_t& size_limit, size_t& count_limit) {
  size_limit = SIZE_MAX;
  count_limit = SIZE_MAX;
  if (fill >= 0) {
    count_limit = fill == 0 ? 1 : static_cast<size_t>(fill);
  } else {
    size_limit = negative_fill_limit(fill);
  }
}

bool Quicklist::exceeds_limit(int fill, size_t new_sz, size_t new_count) {
  size_t size_limit = 0;
  size_t count_limit = 0;
  node_limit(fill, size_limit, count_limit);
  if (size_limit != SIZE_MAX) {
    return new_sz > size_limit;
  }
  if (new_sz > k_size_safety_limit) {
    return true;
  }
  return new_count > count_limit;
}

bool Quicklist::is_large_element(size_t sz, int fill) {
  if (fill >= 0) {
    return sz > k_size_safety_limit;
  }
  return sz > negative_fill_limit(fill);
}

bool Quicklist::allow_insert(const Node* n, size_t sz) const {
  if (n == nullptr || n->is_plain() || is_large_element(sz, m_fill)) {
    return false;
  }
  return !exceeds_limit(m_fill, n->m_sz + sz + k_entry_overhead_estimate, n->m_count + 1);
}

bool Quicklist::allow_merge(const Node* a, const Node* b) const {
  if (a == nullptr || b == nullptr || a->is_plain() || b->is_plain()) {
    return false;
  }
  // One header and terminator disappear in the merge.
  return !exceeds_limit(m_fill, a->m_sz + b->m_sz - 7, a->m_count + b->m_count);
}

// --- Nodes and accounting -------------------------------------------------------------------

std::string_view Quicklist::Node::raw(std::string& scratch) const {
  if (m_compressed) {
    auto data = lzf_decompress(m_blob, m_sz);
    assert(data);
    scratch = std::move(*data);
    return scratch;
  }
  if (m_lp) {
    return m_lp->data();
  }
  return m_blob;
}

size_t Quicklist::node_bytes(const Node* n) {
  return sizeof(Node) + (n->m_lp ? n->m_lp->bytes() : 0) +
         (n->m_blob.capacity() > 15 ? n->m_blob.capacity() : 0);
}

void Quicklist::account(const Node* n, bool add) {
  if (add) {
    m_bytes += node_bytes(n);
  } else {
    m_bytes -= node_bytes(n);
  }
}

void Quicklist::update_sz(Node* n) {
  if (n->m_lp) {
    n->m_sz = n->m_lp->byte_size();
    n->m_count = static_cast<uint32_t>(n->m_lp->size());
  }
}

Quicklist::Node* Quicklist::new_packed_node(std::string_view first) {
  Node* n = new Node;
  n->m_lp.emplace();
  n->m_lp->append(first);
  update_sz(n);
  account(n, true);
  return n;
}

Quicklist::Node* Quicklist::new_plain_node(std::string_view element) {
  Node* n = new Node;
  n->m_container = Container::plain;
  n->m_blob.assign(element);
  n->m_sz = element.size();
  n->m_count = 1;
  account(n, true);
  return n;
}

void Quicklist::free_node(Node* n) {
  account(n, false);
  delete n;
}

Quicklist::Quicklist(int fill, int compress_depth) : m_fill(fill), m_compress(compress_depth) {}

Quicklist::~Quicklist() {
  Node* n = m_head;
  while (n != nullptr) {
    Node* next = n->m_next;
    delete n;
    n = next;
  }
}

std::unique_ptr<Quicklist> Quicklist::clone() const {
  auto copy = std::make_unique<Quicklist>(m_fill, m_compress);
  for (const Node* n = m_head; n != nullptr; n = n->m_next) {
    Node* c = new Node;
    c->m_lp = n->m_lp;
    c->m_blob = n->m_blob;
    c->m_sz = n->m_sz;
    c->m_count = n->m_count;
    c->m_container = n->m_container;
    c->m_compressed = n->m_compressed;
    c->m_prev = copy->m_tail;
    if (copy->m_tail != nullptr) {
      copy->m_tail->m_next = c;
    } else {
      copy->m_head = c;
    }
    copy->m_tail = c;
    copy->account(c, true);
  }
  copy->m_len = m_len;
  copy->m_count = m_count;
  return copy;
}

// --- Compression --------------------------------------------------------------------------

bool Quicklist::compress_node(Node* n) {
  if (n == nullptr || n->m_compressed || n->m_dont_compress) {
    return false;
  }
  n->m_recompress = false;
  // Head and tail stay raw (Valkey asserts this; here it is simply enforced).
  if (n == m_head || n == m_tail || n->m_sz < k_min_compress_bytes) {
    return false;
  }
  std::string_view raw = n->m_lp ? n->m_lp->data() : std::string_view(n->m_blob);
  std::string out(n->m_sz, '\0');
  size_t csz = lzf_compress(raw.data(), raw.size(), out.data(), out.size());
  if (csz == 0 || csz + k_min_compress_improve >= n->m_sz) {
    return false;
  }
  out.resize(csz);
  out.shrink_to_fit();
  account(n, false);
  n->m_blob = std::move(out);
  n->m_lp.reset();
  n->m_compressed = true;
  account(n, true);
  return true;
}

void Quicklist::decompress_node(Node* n) {
  if (n == nullptr || !n->m_compressed) {
    return;
  }
  n->m_recompress = false;
  auto data = lzf_decompress(n->m_blob, n->m_sz);
  assert(data);
  account(n, false);
  if (n->is_plain()) {
    n->m_blob = std::move(*data);
  } else {
    n->m_lp = Listpack::from_trusted(*data, n->m_count);
    n->m_blob = std::string();
  }
  n->m_compressed = false;
  account(n, true);
}

void Quicklist::decompress_for_use(Node* n) {
  if (n != nullptr && n->m_compressed) {
    decompress_node(n);
    n->m_recompress = true;
  }
}

void Quicklist::recompress_only(Node* n) {
  if (n != nullptr && n->m_recompress) {
    compress_node(n);
  }
}

void Quicklist::compress(Node* n) {
  if (n->m_recompress) {
    compress_node(n);
  } else {
    compress_around(n);
  }
}

void Quicklist::compress_around(Node* node) {
  if (m_len == 0 || m_compress <= 0 || m_len < static_cast<size_t>(m_compress) * 2) {
    return;
  }
  // Walk `depth` nodes in from both ends keeping them raw; the first node beyond the depth
  // on each side (and `node`, if it is interior) gets compressed.
  Node* forward = m_head;
  Node* reverse = m_tail;
  bool in_depth = false;
  for (int depth = 0; depth < m_compress; ++depth) {
    decompress_node(forward);
    decompress_node(reverse);
    if (forward == node || reverse == node) {
      in_depth = true;
    }
    if (forward == reverse || forward->m_next == reverse) {
      return;
    }
    forward = forward->m_next;
    reverse = reverse->m_prev;
  }
  if (!in_depth) {
    compress_node(node);
  }
  compress_node(forward);
  compress_node(reverse);
}

// --- Linking ------------------------------------------------------------------------------

void Quicklist::insert_node(Node* old_node, Node* new_node, bool after) {
  if (after) {
    new_node->m_prev = old_node;
    if (old_node != nullptr) {
      new_node->m_next = old_node->m_next;
      if (old_node->m_next != nullptr) {
        old_node->m_next->m_prev = new_node;
      }
      old_node->m_next = new_node;
    }
    if (m_tail == old_node) {
      m_tail = new_node;
    }
  } else {
    new_node->m_next = old_node;
    if (old_node != nullptr) {
      new_node->m_prev = old_node->m_prev;
      if (old_node->m_prev != nullptr) {
        old_node->m_prev->m_next = new_node;
      }
      old_node->m_prev = new_node;
    }
    if (m_head == old_node) {
      m_head = new_node;
    }
  }
  if (m_len == 0) {
    m_head = m_tail = new_node;
  }
  ++m_len;
  if (old_node != nullptr) {
    compress(old_node);
  }
  compress(new_node);
}

void Quicklist::del_node(Node* n) {
  if (n->m_next != nullptr) {
    n->m_next->m_prev = n->m_prev;
  }
  if (n->m_prev != nullptr) {
    n->m_prev->m_next = n->m_next;
  }
  if (n == m_tail) {
    m_tail = n->m_prev;
  }
  if (n == m_head) {
    m_head = n->m_next;
  }
  --m_len;
  m_count -= n->m_count;
  // Nodes that were beyond the depth may now be within it.
  compress_around(nullptr);
  free_node(n);
}

bool Quicklist::del_index(Node* n, size_t offset) {
  if (n->is_plain()) {
    del_node(n);
    return true;
  }
  account(n, false);
  n->m_lp->erase(n->m_lp->seek(static_cast<int64_t>(offset)));
  update_sz(n);
  account(n, true);
  --m_count;
  if (n->m_count == 0) {
    del_node(n);
    return true;
  }
  return false;
}

void Quicklist::insert_plain(Node* old_node, std::string_view value, bool after) {
  Node* n = new_plain_node(value);
  insert_node(old_node, n, after);
  ++m_count;
}

Quicklist::Node* Quicklist::split_node(Node* n, size_t offset, bool after) {
  Node* fresh = new Node;
  fresh->m_lp = *n->m_lp;
  account(n, false);
  if (after) {
    // `n` keeps [0, offset], the new node takes the rest.
    n->m_lp->erase_range(static_cast<int64_t>(offset) + 1, SIZE_MAX);
    fresh->m_lp->erase_range(0, offset + 1);
  } else {
    // The new node takes [0, offset), `n` keeps the rest.
    n->m_lp->erase_range(0, offset);
    fresh->m_lp->erase_range(static_cast<int64_t>(offset), SIZE_MAX);
  }
  n->m_lp->shrink_to_fit();
  fresh->m_lp->shrink_to_fit();
  update_sz(n);
  update_sz(fresh);
  account(n, true);
  account(fresh, true);
  return fresh;
}

Quicklist::Node* Quicklist::merge_pair(Node* a, Node* b) {
  decompress_node(a);
  decompress_node(b);
  account(a, false);
  a->m_lp->append_all(*b->m_lp);
  update_sz(a);
  account(a, true);
  a->m_recompress = false;
  // `b`'s elements now live in `a`: drop it without changing the element count.
  b->m_count = 0;
  del_node(b);
  compress(a);
  return a;
}

Quicklist::Node* Quicklist::merge_around(Node* center) {
  Node* prev = center->m_prev;
  Node* prev_prev = prev != nullptr ? prev->m_prev : nullptr;
  Node* next = center->m_next;
  Node* next_next = next != nullptr ? next->m_next : nullptr;
  if (allow_merge(prev, prev_prev)) {
    merge_pair(prev_prev, prev);
  }
  if (allow_merge(next, next_next)) {
    merge_pair(next, next_next);
  }
  Node* target = center;
  if (allow_merge(center, center->m_prev)) {
    target = merge_pair(center->m_prev, center);
  }
  if (allow_merge(target, target->m_next)) {
    target = merge_pair(target, target->m_next);
  }
  return target;
}

// --- Public operations --------------------------------------------------------------------

void Quicklist::push_head(std::string_view value) {
  if (is_large_element(value.size(), m_fill)) {
    insert_plain(m_head, value, false);
    return;
  }
  if (allow_insert(m_head, value.size())) {
    decompress_node(m_head);
    account(m_head, false);
    m_head->m_lp->prepend(value);
    update_sz(m_head);
    account(m_head, true);
  } else {
    insert_node(m_head, new_packed_node(value), false);
  }
  ++m_count;
}

void Quicklist::push_tail(std::string_view value) {
  if (is_large_element(value.size(), m_fill)) {
    insert_plain(m_tail, value, true);
    return;
  }
  if (allow_insert(m_tail, value.size())) {
    decompress_node(m_tail);
    account(m_tail, false);
    m_tail->m_lp->append(value);
    update_sz(m_tail);
    account(m_tail, true);
  } else {
    insert_node(m_tail, new_packed_node(value), true);
  }
  ++m_count;
}

bool Quicklist::pop_head(std::string& out) {
  if (m_count == 0) {
    return false;
  }
  decompress_node(m_head);
  out = get({m_head, 0});
  del_index(m_head, 0);
  return true;
}

bool Quicklist::pop_tail(std::string& out) {
  if (m_count == 0) {
    return false;
  }
  decompress_node(m_tail);
  size_t offset = m_tail->m_count - 1;
  out = get({m_tail, offset});
  del_index(m_tail, offset);
  return true;
}

void Quicklist::append_listpack(Listpack&& lp) {
  if (lp.empty()) {
    return;
  }
  Node* n = new Node;
  n->m_lp.emplace(std::move(lp));
  update_sz(n);
  account(n, true);
  size_t count = n->m_count;
  insert_node(m_tail, n, true);
  m_count += count;
}

void Quicklist::append_plain(std::string_view element) {
  insert_plain(m_tail, element, true);
}

Listpack Quicklist::take_single_listpack() {
  assert(m_len == 1 && !m_head->is_plain());
  Node* n = m_head;
  decompress_node(n);
  account(n, false);
  Listpack lp = std::move(*n->m_lp);
  delete n;
  m_head = m_tail = nullptr;
  m_len = 0;
  m_count = 0;
  return lp;
}

Quicklist::Location Quicklist::locate(int64_t index) const {
  auto n = static_cast<int64_t>(m_count);
  if (index < 0) {
    index += n;
  }
  if (index < 0 || index >= n) {
    return {};
  }
  auto target = static_cast<size_t>(index);
  if (target < m_count / 2) {
    size_t seen = 0;
    for (Node* node = m_head; node != nullptr; node = node->m_next) {
      if (target < seen + node->m_count) {
        return {node, target - seen};
      }
      seen += node->m_count;
    }
  } else {
    size_t seen = m_count;  // elements before the end of the current node
    for (Node* node = m_tail; node != nullptr; node = node->m_prev) {
      size_t start = seen - node->m_count;
      if (target >= start) {
        return {node, target - start};
      }
      seen = start;
    }
  }
  return {};
}

std::string Quicklist::get(Location loc) const {
  const Node* n = loc.node;
  std::string scratch;
  if (n->is_plain()) {
    return std::string(n->raw(scratch));
  }
  if (n->m_compressed) {
    Listpack lp = Listpack::from_trusted(n->raw(scratch), n->m_count);
    return lp.get(lp.seek(static_cast<int64_t>(loc.offset))).to_string();
  }
  return n->m_lp->get(n->m_lp->seek(static_cast<int64_t>(loc.offset))).to_string();
}

void Quicklist::insert(Location loc, bool after, std::string_view value) {
  Node* node = loc.node;
  size_t sz = value.size();
  if (node == nullptr) {
    if (is_large_element(sz, m_fill)) {
      insert_plain(m_tail, value, after);
      return;
    }
    insert_node(nullptr, new_packed_node(value), after);
    ++m_count;
    return;
  }
  bool full = !allow_insert(node, sz);
  bool at_tail = after && loc.offset + 1 == node->m_count;
  bool at_head = !after && loc.offset == 0;
  bool avail_next = at_tail && allow_insert(node->m_next, sz);
  bool avail_prev = at_head && allow_insert(node->m_prev, sz);

  if (is_large_element(sz, m_fill)) {
    if (node->is_plain() || at_tail || at_head) {
      insert_plain(node, value, after);
    } else {
      decompress_for_use(node);
      Node* rest = split_node(node, loc.offset, after);
      Node* entry = new_plain_node(value);
      insert_node(node, entry, after);
      insert_node(entry, rest, after);
      ++m_count;
    }
    return;
  }

  if (!full) {
    decompress_for_use(node);
    account(node, false);
    Listpack::Pos p = node->m_lp->seek(static_cast<int64_t>(loc.offset));
    if (after) {
      node->m_lp->insert_after(p, value);
    } else {
      node->m_lp->insert_before(p, value);
    }
    update_sz(node);
    account(node, true);
    recompress_only(node);
  } else if (at_tail && avail_next) {
    Node* next = node->m_next;
    decompress_for_use(next);
    account(next, false);
    next->m_lp->prepend(value);
    update_sz(next);
    account(next, true);
    recompress_only(next);
    recompress_only(node);
  } else if (at_head && avail_prev) {
    Node* prev = node->m_prev;
    decompress_for_use(prev);
    account(prev, false);
    prev->m_lp->append(value);
    update_sz(prev);
    account(prev, true);
    recompress_only(prev);
    recompress_only(node);
  } else if (at_tail || at_head) {
    insert_node(node, new_packed_node(value), after);
  } else {
    // A full node with the position inside it: split there and put the value at the cut.
    decompress_for_use(node);
    Node* fresh = split_node(node, loc.offset, after);
    account(fresh, false);
    if (after) {
      fresh->m_lp->prepend(value);
    } else {
      fresh->m_lp->append(value);
    }
    update_sz(fresh);
    account(fresh, true);
    insert_node(node, fresh, after);
    merge_around(node);
  }
  ++m_count;
}

void Quicklist::replace(Location loc, std::string_view value) {
  Node* node = loc.node;
  size_t sz = value.size();
  if (!node->is_plain() && !is_large_element(sz, m_fill)) {
    decompress_for_use(node);
    account(node, false);
    node->m_lp->replace(node->m_lp->seek(static_cast<int64_t>(loc.offset)), value);
    update_sz(node);
    account(node, true);
    compress(node);
    return;
  }
  if (node->is_plain()) {
    if (is_large_element(sz, m_fill)) {
      decompress_for_use(node);
      account(node, false);
      node->m_blob.assign(value);
      node->m_blob.shrink_to_fit();
      node->m_sz = sz;
      account(node, true);
      compress(node);
    } else {
      insert(loc, true, value);
      del_node(node);
    }
    return;
  }
  // A large value replacing an element of a packed node: it gets a plain node of its own
  // right after the element, which is then deleted.
  decompress_for_use(node);
  node->m_dont_compress = true;
  Node* rest = nullptr;
  if (loc.offset + 1 != node->m_count) {
    rest = split_node(node, loc.offset, true);
  }
  Node* fresh = new_plain_node(value);
  insert_node(node, fresh, true);
  if (rest != nullptr) {
    insert_node(fresh, rest, true);
  }
  ++m_count;
  if (node->m_count == 1) {
    del_node(node);
  } else {
    del_index(node, node->m_count - 1);
    node->m_dont_compress = false;
    fresh = merge_around(fresh);
    compress(fresh);
    if (fresh->m_prev != nullptr) {
      compress(fresh->m_prev);
    }
    if (fresh->m_next != nullptr) {
      compress(fresh->m_next);
    }
  }
}

bool Quicklist::replace_at(int64_t index, std::string_view value) {
  Location loc = locate(index);
  if (!loc) {
    return false;
  }
  replace(loc, value);
  return true;
}

Quicklist::Location Quicklist::erase(Location loc, bool forward) {
  Node* node = loc.node;
  Node* prev = node->m_prev;
  Node* next = node->m_next;
  decompress_for_use(node);
  if (del_index(node, loc.offset)) {
    if (forward) {
      return next != nullptr ? Location{next, 0} : Location{};
    }
    return prev != nullptr ? Location{prev, prev->m_count - 1} : Location{};
  }
  recompress_only(node);
  if (forward) {
    if (loc.offset < node->m_count) {
      return {node, loc.offset};
    }
    return next != nullptr ? Location{next, 0} : Location{};
  }
  if (loc.offset > 0) {
    return {node, loc.offset - 1};
  }
  return prev != nullptr ? Location{prev, prev->m_count - 1} : Location{};
}

void Quicklist::del_range(int64_t start, int64_t count) {
  if (count <= 0) {
    return;
  }
  auto total = static_cast<int64_t>(m_count);
  int64_t extent = count;
  if (start >= 0 && extent > total - start) {
    extent = total - start;
  } else if (start < 0 && extent > -start) {
    extent = -start;
  }
  Location loc = locate(start);
  if (!loc) {
    return;
  }
  Node* node = loc.node;
  size_t offset = loc.offset;
  auto left = static_cast<size_t>(extent);
  while (left > 0 && node != nullptr) {
    Node* next = node->m_next;
    size_t del = 0;
    bool entire = false;
    if (offset == 0 && left >= node->m_count) {
      entire = true;
      del = node->m_count;
    } else if (left + offset >= node->m_count) {
      del = node->m_count - offset;
    } else {
      del = left;
    }
    if (entire || node->is_plain()) {
      del_node(node);
    } else {
      decompress_for_use(node);
      account(node, false);
      node->m_lp->erase(node->m_lp->seek(static_cast<int64_t>(offset)), del);
      update_sz(node);
      account(node, true);
      m_count -= del;
      if (node->m_count == 0) {
        del_node(node);
      } else {
        recompress_only(node);
      }
    }
    left -= del;
    node = next;
    offset = 0;
  }
}

size_t Quicklist::remove_equal(std::string_view value, size_t limit, bool from_tail) {
  size_t removed = 0;
  Node* node = from_tail ? m_tail : m_head;
  while (node != nullptr && (limit == 0 || removed < limit)) {
    Node* following = from_tail ? node->m_prev : node->m_next;
    std::string scratch;
    if (node->is_plain()) {
      if (node->raw(scratch) == value) {
        del_node(node);
        ++removed;
      }
      node = following;
      continue;
    }
    // Find the matching offsets on a read-only view first, so nodes without a match are
    // never decompressed for writing.
    std::optional<Listpack> decoded;
    const Listpack* view = nullptr;
    if (node->m_compressed) {
      decoded = Listpack::from_trusted(node->raw(scratch), node->m_count);
      view = &*decoded;
    } else {
      view = &*node->m_lp;
    }
    std::vector<size_t> hits;  // ascending offsets
    size_t n = view->size();
    size_t budget = limit == 0 ? SIZE_MAX : limit - removed;
    if (!from_tail) {
      size_t i = 0;
      for (Listpack::Pos p = view->first(); p != Listpack::k_none && hits.size() < budget;
           p = view->next(p), ++i) {
        if (view->get(p).equals(value)) {
          hits.push_back(i);
        }
      }
    } else {
      size_t i = n;
      for (Listpack::Pos p = view->last(); p != Listpack::k_none && hits.size() < budget;
           p = view->prev(p)) {
        --i;
        if (view->get(p).equals(value)) {
          hits.insert(hits.begin(), i);
        }
      }
    }
    if (!hits.empty()) {
      decompress_for_use(node);
      account(node, false);
      Listpack& lp = *node->m_lp;
      Listpack::Pos p = lp.first();
      size_t i = 0;
      size_t h = 0;
      while (p != Listpack::k_none && h < hits.size()) {
        if (i == hits[h]) {
          p = lp.erase(p);
          ++h;
        } else {
          p = lp.next(p);
        }
        ++i;
      }
      update_sz(node);
      account(node, true);
      m_count -= hits.size();
      removed += hits.size();
      if (node->m_count == 0) {
        del_node(node);
      } else {
        recompress_only(node);
      }
    }
    node = following;
  }
  return removed;
}

bool Quicklist::check(std::string* why) const {
  auto fail = [&](const std::string& text) {
    if (why != nullptr) {
      *why = text;
    }
    return false;
  };
  size_t nodes = 0;
  size_t elements = 0;
  size_t bytes = 0;
  const Node* prev = nullptr;
  for (const Node* n = m_head; n != nullptr; n = n->m_next) {
    std::string at = "node " + std::to_string(nodes) + ": ";
    if (n->m_prev != prev) {
      return fail(at + "bad prev link");
    }
    if (n->m_count == 0) {
      return fail(at + "empty");
    }
    if (n->is_plain() && n->m_count != 1) {
      return fail(at + "plain node with several elements");
    }
    if (!n->is_plain() && n->m_compressed == n->m_lp.has_value()) {
      return fail(at + "listpack presence disagrees with compression");
    }
    if (n->m_lp && (n->m_lp->size() != n->m_count || n->m_lp->byte_size() != n->m_sz)) {
      return fail(at + "count or size out of date");
    }
    if (n->m_compressed && (n == m_head || n == m_tail)) {
      return fail(at + "head or tail compressed");
    }
    if (n->m_compressed) {
      std::string scratch;
      if (!lzf_decompress(n->m_blob, n->m_sz)) {
        return fail(at + "compressed bytes do not decompress");
      }
    }
    elements += n->m_count;
    bytes += node_bytes(n);
    prev = n;
    ++nodes;
  }
  if (prev != m_tail) {
    return fail("tail is not the last node");
  }
  if (nodes != m_len || elements != m_count) {
    return fail("node or element count out of date");
  }
  if (bytes != m_bytes) {
    return fail("tracked bytes " + std::to_string(m_bytes) + " != " + std::to_string(bytes));
  }
  return true;
}

// --- Cursor -------------------------------------------------------------------------------

Quicklist::Cursor::Cursor(const Quicklist& ql, int64_t index, bool forward) : m_forward(forward) {
  Location loc = ql.locate(index);
  if (loc) {
    m_offset = loc.offset;
    enter(loc.node, false);
  }
}

void Quicklist::Cursor::enter(const Node* node, bool from_start) {
  m_node = node;
  if (node == nullptr) {
    return;
  }
  if (from_start) {
    m_offset = m_forward ? 0 : node->m_count - 1;
  }
  if (node->is_plain()) {
    m_lp = nullptr;
    if (node->m_compressed) {
      node->raw(m_plain_scratch);
    }
    return;
  }
  if (node->m_compressed) {
    std::string raw;
    node->raw(raw);
    m_scratch = Listpack::from_trusted(raw, node->m_count);
    m_lp = &*m_scratch;
  } else {
    m_lp = &*node->m_lp;
  }
  m_pos = m_lp->seek(static_cast<int64_t>(m_offset));
}

LpValue Quicklist::Cursor::value() const {
  if (m_node->is_plain()) {
    return LpValue::of_str(m_node->m_compressed ? std::string_view(m_plain_scratch)
                                                : std::string_view(m_node->m_blob));
  }
  return m_lp->get(m_pos);
}

void Quicklist::Cursor::advance() {
  if (m_forward) {
    if (m_offset + 1 < m_node->m_count) {
      ++m_offset;
      m_pos = m_lp->next(m_pos);
      return;
    }
    enter(m_node->m_next, true);
    return;
  }
  if (m_offset > 0) {
    --m_offset;
    m_pos = m_lp->prev(m_pos);
    return;
  }
  enter(m_node->m_prev, true);
}

}  // namespace keyshift::engine

#include "engine/keyspace/list_value.hpp"

namespace keyshift::engine {

size_t ListValue::bytes() const {
  if (m_ql) {
    return sizeof(*this) + sizeof(Quicklist) + m_ql->bytes();
  }
  return sizeof(*this) + m_lp.bytes();
}

HeapObject* ListValue::clone() const {
  if (m_ql) {
    return new ListValue(m_ql->clone());
  }
  Listpack copy = Listpack::from_trusted(m_lp.data(), m_lp.size());
  return new ListValue(std::move(copy));
}

void ListValue::prepare_growth(const ListLimits& limits, size_t add_bytes, size_t add_count) {
  if (m_ql) {
    return;
  }
  if (!Quicklist::exceeds_limit(limits.fill, m_lp.byte_size() + add_bytes,
                                m_lp.size() + add_count)) {
    return;
  }
  auto ql = std::make_unique<Quicklist>(limits.fill, limits.compress_depth);
  if (!m_lp.empty()) {
    ql->append_listpack(std::move(m_lp));
  }
  m_lp = Listpack();
  m_lp.shrink_to_fit();
  m_ql = std::move(ql);
}

void ListValue::try_to_listpack(const ListLimits& limits, bool shrinking) {
  if (!m_ql || m_ql->node_count() != 1 || m_ql->head()->is_plain()) {
    return;
  }
  size_t size_limit = 0;
  size_t count_limit = 0;
  Quicklist::node_limit(limits.fill, size_limit, count_limit);
  if (shrinking) {
    // Half the limit, so a list hovering around it does not flip encodings on every write.
    size_limit /= 2;
    count_limit /= 2;
  }
  if (m_ql->head()->sz() > size_limit || m_ql->size() > count_limit) {
    return;
  }
  m_lp = m_ql->take_single_listpack();
  m_ql.reset();
}

void ListValue::convert_auto(const ListLimits& limits) {
  if (m_ql) {
    try_to_listpack(limits, false);
  } else {
    prepare_growth(limits, 0, 0);
  }
}

void ListValue::push(ListSide side, std::string_view value) {
  if (m_ql) {
    if (side == ListSide::head) {
      m_ql->push_head(value);
    } else {
      m_ql->push_tail(value);
    }
    return;
  }
  if (side == ListSide::head) {
    m_lp.prepend(value);
  } else {
    m_lp.append(value);
  }
}

bool ListValue::pop(ListSide side, std::string& out) {
  if (m_ql) {
    return side == ListSide::head ? m_ql->pop_head(out) : m_ql->pop_tail(out);
  }
  if (m_lp.empty()) {
    return false;
  }
  Listpack::Pos p = side == ListSide::head ? m_lp.first() : m_lp.last();
  out = m_lp.get(p).to_string();
  m_lp.erase(p);
  return true;
}

std::optional<std::string> ListValue::at(int64_t index) const {
  if (m_ql) {
    Quicklist::Location loc = m_ql->locate(index);
    if (!loc) {
      return std::nullopt;
    }
    return m_ql->get(loc);
  }
  Listpack::Pos p = m_lp.seek(index);
  if (p == Listpack::k_none) {
    return std::nullopt;
  }
  return m_lp.get(p).to_string();
}

bool ListValue::set(int64_t index, std::string_view value) {
  if (m_ql) {
    return m_ql->replace_at(index, value);
  }
  Listpack::Pos p = m_lp.seek(index);
  if (p == Listpack::k_none) {
    return false;
  }
  m_lp.replace(p, value);
  return true;
}

bool ListValue::insert(std::string_view pivot, std::string_view value, bool after) {
  if (m_ql) {
    for (Quicklist::Cursor c(*m_ql, 0, true); c.valid(); c.advance()) {
      if (c.value().equals(pivot)) {
        m_ql->insert(c.location(), after, value);
        return true;
      }
    }
    return false;
  }
  Listpack::Pos p = m_lp.find(pivot, m_lp.first());
  if (p == Listpack::k_none) {
    return false;
  }
  if (after) {
    m_lp.insert_after(p, value);
  } else {
    m_lp.insert_before(p, value);
  }
  return true;
}

size_t ListValue::remove(std::string_view value, int64_t count) {
  bool from_tail = count < 0;
  // -count cannot overflow: callers pass counts within [-LONG_MAX, LONG_MAX].
  size_t limit = static_cast<size_t>(from_tail ? -count : count);
  if (m_ql) {
    return m_ql->remove_equal(value, limit, from_tail);
  }
  size_t removed = 0;
  if (!from_tail) {
    Listpack::Pos p = m_lp.first();
    while (p != Listpack::k_none) {
      p = m_lp.find(value, p);
      if (p == Listpack::k_none) {
        break;
      }
      p = m_lp.erase(p);
      ++removed;
      if (limit != 0 && removed == limit) {
        break;
      }
    }
    return removed;
  }
  Listpack::Pos p = m_lp.last();
  while (p != Listpack::k_none) {
    Listpack::Pos prev = m_lp.prev(p);
    if (m_lp.get(p).equals(value)) {
      // Entries before `p` keep their offsets when it is erased.
      m_lp.erase(p);
      ++removed;
      if (limit != 0 && removed == limit) {
        break;
      }
    }
    p = prev;
  }
  return removed;
}

void ListValue::del_range(int64_t start, int64_t count) {
  if (count <= 0) {
    return;
  }
  if (m_ql) {
    m_ql->del_range(start, count);
    return;
  }
  m_lp.erase_range(start, static_cast<size_t>(count));
}

// --- Reader -------------------------------------------------------------------------------

ListValue::Reader::Reader(const ListValue& list, int64_t index, bool forward) : m_forward(forward) {
  if (list.m_ql) {
    m_cursor.emplace(*list.m_ql, index, forward);
    return;
  }
  m_lp = &list.m_lp;
  m_pos = m_lp->seek(index);
}

bool ListValue::Reader::valid() const {
  return m_cursor ? m_cursor->valid() : m_pos != Listpack::k_none;
}

LpValue ListValue::Reader::value() const {
  return m_cursor ? m_cursor->value() : m_lp->get(m_pos);
}

void ListValue::Reader::advance() {
  if (m_cursor) {
    m_cursor->advance();
    return;
  }
  m_pos = m_forward ? m_lp->next(m_pos) : m_lp->prev(m_pos);
}

Digest digest_list(const ListValue& list, bool has_expire, const Digest& seed) {
  ListDigestBuilder builder(seed);
  list.for_each([&](const LpValue& v) {
    if (v.is_int()) {
      builder.add(v.integer());
    } else {
      builder.add(v.str());
    }
  });
  return builder.finish(has_expire);
}

}  // namespace keyshift::engine

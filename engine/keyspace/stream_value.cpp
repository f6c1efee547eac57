#include "engine/keyspace/stream_value.hpp"

#include <charconv>

namespace keyshift::engine {

namespace {

constexpr int64_t k_flag_deleted = 1;     // STREAM_ITEM_FLAG_DELETED
constexpr int64_t k_flag_samefields = 2;  // STREAM_ITEM_FLAG_SAMEFIELDS

int64_t lp_int(const Listpack& lp, Listpack::Pos p) {
  LpValue v = lp.get(p);
  if (v.is_int()) {
    return v.integer();
  }
  int64_t out = 0;
  std::from_chars(v.str().data(), v.str().data() + v.str().size(), out);
  return out;
}

/// Replaces the integer at `p`, keeping the stream's byte count in step.
Listpack::Pos replace_int(Listpack& lp, Listpack::Pos p, int64_t v) {
  return lp.replace(p, LpValue::of_int(v));
}

}  // namespace

bool StreamId::incr() {
  if (seq == UINT64_MAX) {
    if (ms == UINT64_MAX) {
      ms = seq = 0;
      return false;
    }
    ++ms;
    seq = 0;
    return true;
  }
  ++seq;
  return true;
}

bool StreamId::decr() {
  if (seq == 0) {
    if (ms == 0) {
      ms = seq = UINT64_MAX;
      return false;
    }
    --ms;
    seq = UINT64_MAX;
    return true;
  }
  --seq;
  return true;
}

std::string StreamId::text() const {
  char buf[48];
  char* end = std::to_chars(buf, buf + 20, ms).ptr;
  *end++ = '-';
  end = std::to_chars(end, buf + sizeof buf, seq).ptr;
  return std::string(buf, static_cast<size_t>(end - buf));
}

std::string StreamId::encode() const {
  std::string out(16, '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<char>(ms >> (56 - 8 * i));
    out[static_cast<size_t>(8 + i)] = static_cast<char>(seq >> (56 - 8 * i));
  }
  return out;
}

bool StreamEntryView::deleted() const {
  return (flags & k_flag_deleted) != 0;
}

HeapObject* StreamValue::clone() const {
  auto* c = new StreamValue();
  for (const auto& [master, lp] : m_nodes) {
    c->m_nodes.emplace(master, Listpack(lp));
  }
  c->m_length = m_length;
  c->m_last_id = m_last_id;
  c->m_first_id = m_first_id;
  c->m_max_deleted_id = m_max_deleted_id;
  c->m_entries_added = m_entries_added;
  size_t extra = m_extra_bytes;
  for (const auto& [master, lp] : m_nodes) {
    // The copies are sized exactly; count what they really hold.
    extra -= lp.bytes();
    extra += c->m_nodes.at(master).bytes();
  }
  c->m_extra_bytes = extra;
  for (const auto& [name, g] : m_groups) {
    StreamGroup& cg = c->m_groups[name];
    cg.last_id = g.last_id;
    cg.entries_read = g.entries_read;
    for (const auto& [id, nack] : g.pel) {
      cg.pel.emplace(id, StreamNack{nack.delivery_time_ms, nack.delivery_count, nullptr});
    }
    for (const auto& [cname, consumer] : g.consumers) {
      auto copy = std::make_unique<StreamConsumer>();
      copy->name = consumer->name;
      copy->seen_time_ms = consumer->seen_time_ms;
      copy->active_time_ms = consumer->active_time_ms;
      for (const auto& [id, nack] : consumer->pel) {
        StreamNack& n = cg.pel.at(id);
        n.consumer = copy.get();
        copy->pel.emplace(id, &n);
      }
      cg.consumers.emplace(cname, std::move(copy));
    }
  }
  return c;
}

StreamNodeReader::StreamNodeReader(StreamId master, const Listpack& lp)
    : m_master(master), m_lp(lp) {
  Listpack::Pos p = lp.first();  // count
  p = lp.next(p);                // deleted
  p = lp.next(p);                // master field count
  m_master_fields = lp_int(lp, p);
  p = lp.next(p);
  m_master_start = p;
  for (int64_t i = 0; i < m_master_fields; ++i) {
    p = lp.next(p);
  }
  m_first = lp.next(p);  // past the master's terminating 0
}

Listpack::Pos StreamNodeReader::decode(Listpack::Pos pos, StreamEntryView& e,
                                       bool with_fields) const {
  const Listpack& lp = m_lp;
  Listpack::Pos p = pos;
  e.flags_pos = p;
  e.flags = lp_int(lp, p);
  p = lp.next(p);
  e.id.ms = m_master.ms + static_cast<uint64_t>(lp_int(lp, p));
  p = lp.next(p);
  e.id.seq = m_master.seq + static_cast<uint64_t>(lp_int(lp, p));
  p = lp.next(p);
  e.fields.clear();
  if ((e.flags & k_flag_samefields) != 0) {
    Listpack::Pos f = m_master_start;
    for (int64_t i = 0; i < m_master_fields; ++i) {
      if (with_fields) {
        e.fields.emplace_back(lp.get(f), lp.get(p));
        f = lp.next(f);
      }
      p = lp.next(p);
    }
  } else {
    int64_t n = lp_int(lp, p);
    p = lp.next(p);
    for (int64_t i = 0; i < n; ++i) {
      Listpack::Pos value = lp.next(p);
      if (with_fields) {
        e.fields.emplace_back(lp.get(p), lp.get(value));
      }
      p = lp.next(value);
    }
  }
  return lp.next(p);  // past lp-count
}

void StreamValue::decode_node(StreamId master, const Listpack& lp,
                              std::vector<StreamEntryView>& out) {
  out.clear();
  StreamNodeReader reader(master, lp);
  for (Listpack::Pos p = reader.first_entry(); p != Listpack::k_none;) {
    StreamEntryView e;
    p = reader.decode(p, e, true);
    out.push_back(std::move(e));
  }
}

void StreamValue::append(StreamId id, std::span<const std::string_view> field_values,
                         const StreamLimits& limits) {
  size_t numfields = field_values.size() / 2;
  uint64_t total = 0;
  for (std::string_view s : field_values) {
    total += s.size();
  }
  Listpack* lp = nullptr;
  StreamId master;
  if (!m_nodes.empty()) {
    auto last = std::prev(m_nodes.end());
    Listpack& tail = last->second;
    uint64_t max_bytes = limits.node_max_bytes;
    if (max_bytes == 0 || max_bytes > k_max_entry_bytes) {
      max_bytes = k_max_entry_bytes;
    }
    bool new_node = false;
    if (tail.byte_size() + total >= max_bytes) {
      new_node = true;
    } else if (limits.node_max_entries != 0) {
      Listpack::Pos p = tail.first();
      int64_t count = lp_int(tail, p) + lp_int(tail, tail.next(p));
      new_node = static_cast<uint64_t>(count) >= limits.node_max_entries;
    }
    if (new_node) {
      size_t before = tail.bytes();
      tail.shrink_to_fit();
      account(static_cast<int64_t>(tail.bytes()) - static_cast<int64_t>(before));
    } else {
      lp = &tail;
      master = last->first;
    }
  }
  bool same_fields = false;
  size_t before = 0;
  if (lp == nullptr) {
    master = id;
    lp = &m_nodes.emplace(id, Listpack()).first->second;
    lp->append(int64_t{1});
    lp->append(int64_t{0});
    lp->append(static_cast<int64_t>(numfields));
    for (size_t i = 0; i < numfields; ++i) {
      lp->append(field_values[i * 2]);
    }
    lp->append(int64_t{0});
    account(static_cast<int64_t>(k_node_overhead));
    same_fields = true;
  } else {
    before = lp->bytes();
    Listpack::Pos p = lp->first();
    p = replace_int(*lp, p, lp_int(*lp, p) + 1);
    p = lp->next(p);  // deleted
    p = lp->next(p);  // master field count
    auto master_fields = static_cast<size_t>(lp_int(*lp, p));
    p = lp->next(p);
    if (master_fields == numfields) {
      size_t i = 0;
      for (; i < master_fields; ++i) {
        if (!lp->get(p).equals(field_values[i * 2])) {
          break;
        }
        p = lp->next(p);
      }
      same_fields = i == master_fields;
    }
  }
  lp->append(same_fields ? k_flag_samefields : int64_t{0});
  lp->append(static_cast<int64_t>(id.ms - master.ms));
  lp->append(static_cast<int64_t>(id.seq - master.seq));
  if (!same_fields) {
    lp->append(static_cast<int64_t>(numfields));
  }
  for (size_t i = 0; i < numfields; ++i) {
    if (!same_fields) {
      lp->append(field_values[i * 2]);
    }
    lp->append(field_values[i * 2 + 1]);
  }
  auto lp_count = static_cast<int64_t>(numfields) + 3;
  if (!same_fields) {
    lp_count += static_cast<int64_t>(numfields) + 1;
  }
  lp->append(lp_count);
  account(static_cast<int64_t>(lp->bytes()) - static_cast<int64_t>(before));
  ++m_length;
  ++m_entries_added;
  m_last_id = id;
  if (m_length == 1) {
    m_first_id = id;
  }
}

void StreamValue::load_node(StreamId master, Listpack&& lp) {
  m_length += static_cast<uint64_t>(lp_int(lp, lp.first()));
  auto it = m_nodes.emplace_hint(m_nodes.end(), master, std::move(lp));
  account(static_cast<int64_t>(it->second.bytes() + k_node_overhead));
}

void StreamValue::remove_node(std::map<StreamId, Listpack>::iterator it) {
  account(-static_cast<int64_t>(it->second.bytes() + k_node_overhead));
  m_nodes.erase(it);
}

bool StreamValue::remove(StreamId id) {
  auto it = m_nodes.upper_bound(id);
  if (it == m_nodes.begin()) {
    return false;
  }
  --it;
  StreamNodeReader reader(it->first, it->second);
  StreamEntryView e;
  for (Listpack::Pos pos = reader.first_entry(); pos != Listpack::k_none;) {
    pos = reader.decode(pos, e, false);
    if (e.id != id || e.deleted()) {
      continue;
    }
    Listpack& lp = it->second;
    Listpack::Pos p = lp.first();
    int64_t count = lp_int(lp, p);
    if (count == 1) {
      remove_node(it);
    } else {
      size_t before = lp.bytes();
      // Flags stay within one byte, so positions after them do not move.
      replace_int(lp, e.flags_pos, e.flags | k_flag_deleted);
      p = replace_int(lp, lp.first(), count - 1);
      p = lp.next(p);
      replace_int(lp, p, lp_int(lp, p) + 1);
      account(static_cast<int64_t>(lp.bytes()) - static_cast<int64_t>(before));
    }
    --m_length;
    return true;
  }
  return false;
}

int64_t StreamValue::trim(const StreamTrim& t) {
  if (t.strategy == StreamTrim::Strategy::none) {
    return 0;
  }
  bool by_len = t.strategy == StreamTrim::Strategy::maxlen;
  int64_t deleted = 0;
  std::vector<StreamEntryView> entries;
  auto it = m_nodes.begin();
  while (it != m_nodes.end()) {
    if (by_len && m_length <= t.maxlen) {
      break;
    }
    Listpack& lp = it->second;
    int64_t count = lp_int(lp, lp.first());
    if (t.limit != 0 && deleted + count > t.limit) {
      break;
    }
    bool whole = false;
    if (by_len) {
      whole = m_length - static_cast<uint64_t>(count) >= t.maxlen;
    } else {
      // The node's last entry, deleted or not, as Valkey's lpGetEdgeStreamID reads it.
      StreamNodeReader reader(it->first, lp);
      StreamEntryView last;
      for (Listpack::Pos pos = reader.first_entry(); pos != Listpack::k_none;) {
        pos = reader.decode(pos, last, false);
      }
      whole = last.id < t.minid;
    }
    if (whole) {
      auto next = std::next(it);
      remove_node(it);
      it = next;
      m_length -= static_cast<uint64_t>(count);
      deleted += count;
      continue;
    }
    if (t.approx) {
      break;
    }
    decode_node(it->first, lp, entries);
    size_t before = lp.bytes();
    int64_t from_node = 0;
    for (const StreamEntryView& e : entries) {
      bool stop = by_len ? m_length <= t.maxlen : e.id >= t.minid;
      if (stop) {
        break;
      }
      if (!e.deleted()) {
        replace_int(lp, e.flags_pos, e.flags | k_flag_deleted);
        ++from_node;
        --m_length;
      }
    }
    deleted += from_node;
    Listpack::Pos p = replace_int(lp, lp.first(), count - from_node);
    p = lp.next(p);
    replace_int(lp, p, lp_int(lp, p) + from_node);
    account(static_cast<int64_t>(lp.bytes()) - static_cast<int64_t>(before));
    break;
  }
  if (m_length == 0) {
    m_first_id = {};
  } else if (deleted != 0) {
    edge_id(true, m_first_id);
  }
  return deleted;
}

bool StreamValue::edge_id(bool first, StreamId& out) const {
  bool found = false;
  range({}, StreamId::max(), !first, [&](const StreamEntryView& e) {
    out = e.id;
    found = true;
    return false;
  });
  if (!found) {
    out = first ? StreamId::max() : StreamId{};
  }
  return found;
}

bool StreamValue::contains(StreamId id) const {
  bool found = false;
  range(id, id, false, [&](const StreamEntryView&) {
    found = true;
    return false;
  });
  return found;
}

StreamGroup* StreamValue::group(std::string_view name) {
  auto it = m_groups.find(std::string(name));
  return it == m_groups.end() ? nullptr : &it->second;
}

StreamGroup* StreamValue::create_group(std::string_view name, StreamId last_id,
                                       int64_t entries_read) {
  auto [it, added] = m_groups.try_emplace(std::string(name));
  if (!added) {
    return nullptr;
  }
  it->second.last_id = last_id;
  it->second.entries_read = entries_read;
  account(static_cast<int64_t>(k_group_overhead + name.size()));
  return &it->second;
}

bool StreamValue::destroy_group(std::string_view name) {
  auto it = m_groups.find(std::string(name));
  if (it == m_groups.end()) {
    return false;
  }
  StreamGroup& g = it->second;
  while (!g.consumers.empty()) {
    delete_consumer(g, g.consumers.begin()->second.get());
  }
  account(-static_cast<int64_t>(g.pel.size() * k_nack_overhead));
  account(-static_cast<int64_t>(k_group_overhead + name.size()));
  m_groups.erase(it);
  return true;
}

StreamConsumer* StreamValue::create_consumer(StreamGroup& g, std::string_view name,
                                             int64_t now_ms) {
  auto [it, added] = g.consumers.try_emplace(std::string(name));
  if (!added) {
    return nullptr;
  }
  it->second = std::make_unique<StreamConsumer>();
  it->second->name = std::string(name);
  it->second->seen_time_ms = now_ms;
  it->second->active_time_ms = -1;
  account(static_cast<int64_t>(k_consumer_overhead + 2 * name.size()));
  return it->second.get();
}

uint64_t StreamValue::delete_consumer(StreamGroup& g, StreamConsumer* c) {
  uint64_t pending = c->pel.size();
  for (const auto& [id, nack] : c->pel) {
    g.pel.erase(id);
  }
  account(-static_cast<int64_t>(pending * (k_nack_overhead + k_consumer_pel_overhead)));
  account(-static_cast<int64_t>(k_consumer_overhead + 2 * c->name.size()));
  std::string name = c->name;  // the key must outlive the erase
  g.consumers.erase(name);
  return pending;
}

StreamNack* StreamValue::add_pending(StreamGroup& g, StreamId id, StreamConsumer* c, int64_t now_ms,
                                     uint64_t delivery_count) {
  StreamNack& n = g.pel[id];
  n.delivery_time_ms = now_ms;
  n.delivery_count = delivery_count;
  n.consumer = c;
  account(static_cast<int64_t>(k_nack_overhead));
  if (c != nullptr) {
    c->pel.emplace(id, &n);
    account(static_cast<int64_t>(k_consumer_pel_overhead));
  }
  return &n;
}

bool StreamValue::remove_pending(StreamGroup& g, StreamId id) {
  auto it = g.pel.find(id);
  if (it == g.pel.end()) {
    return false;
  }
  if (it->second.consumer != nullptr) {
    it->second.consumer->pel.erase(id);
    account(-static_cast<int64_t>(k_consumer_pel_overhead));
  }
  g.pel.erase(it);
  account(-static_cast<int64_t>(k_nack_overhead));
  return true;
}

void StreamValue::transfer_pending(StreamGroup& g, StreamId id, StreamNack& nack,
                                   StreamConsumer* c) {
  (void)g;
  if (nack.consumer == c) {
    return;
  }
  if (nack.consumer != nullptr) {
    nack.consumer->pel.erase(id);
  } else {
    account(static_cast<int64_t>(k_consumer_pel_overhead));
  }
  nack.consumer = c;
  c->pel.emplace(id, &nack);
}

int64_t StreamValue::estimate_distance(StreamId id) const {
  if (m_entries_added == 0) {
    return 0;
  }
  auto added = static_cast<int64_t>(m_entries_added);
  if (m_length == 0 && id <= m_last_id) {
    return added;
  }
  if (id == m_last_id) {
    return added;
  }
  if (id > m_last_id) {
    return -1;
  }
  if (m_max_deleted_id.is_zero() || m_max_deleted_id < m_first_id) {
    if (id < m_first_id) {
      return added - static_cast<int64_t>(m_length);
    }
    if (id == m_first_id) {
      return added - static_cast<int64_t>(m_length) + 1;
    }
  }
  return -1;
}

bool StreamValue::range_has_tombstones(StreamId start, StreamId end) const {
  if (m_length == 0 || m_max_deleted_id.is_zero()) {
    return false;
  }
  if (m_first_id > m_max_deleted_id) {
    return false;
  }
  return start <= m_max_deleted_id && m_max_deleted_id <= end;
}

Digest digest_stream(const StreamValue& s, bool has_expire, const Digest& seed) {
  StreamDigestBuilder builder(seed);
  char fbuf[24];
  char vbuf[24];
  s.range({}, StreamId::max(), false, [&](const StreamEntryView& e) {
    builder.add_entry(e.id.ms, e.id.seq);
    for (const auto& [f, v] : e.fields) {
      builder.add_field(f.view(fbuf), v.view(vbuf));
    }
    return true;
  });
  return builder.finish(has_expire);
}

}  // namespace keyshift::engine

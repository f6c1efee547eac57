#include "engine/keyspace/db.hpp"

#include "engine/keyspace/hash_value.hpp"

#include <cstring>
#include <limits>
#include <utility>

namespace keyshift::engine {
namespace {

constexpr uint32_t k_lru_clock_max = (1u << 24) - 1;
constexpr int64_t k_lru_resolution_ms = 1000;
constexpr uint8_t k_lfu_init_val = 5;
// Keys sampled per loop of the active expire cycle and the share of expired keys in a
// sample above which the loop repeats (Valkey's defaults at active-expire-effort 1).
constexpr size_t k_expire_keys_per_loop = 20;
constexpr size_t k_expire_acceptable_stale_pct = 10;

uint32_t lfu_minutes(int64_t now_ms) {
  return static_cast<uint32_t>((now_ms / 1000 / 60) & 65535);
}

/// Bytes a new value brings besides its entry (its heap object or block), counted when the
/// value moves into the keyspace.
size_t spec_value_bytes(const Entry::ValueSpec& value) {
  if (value.kind == Entry::Kind::object) {
    return value.object->bytes();
  }
  if (value.kind == Entry::Kind::blob && value.blob != nullptr) {
    return MemoryCounter::usable_size(value.blob);
  }
  return 0;
}

}  // namespace

bool is_lfu(EvictionPolicy p) {
  return p == EvictionPolicy::allkeys_lfu || p == EvictionPolicy::volatile_lfu;
}

uint32_t lru_clock(int64_t now_ms) {
  return static_cast<uint32_t>((now_ms / k_lru_resolution_ms) & k_lru_clock_max);
}

int64_t lru_idle_ms(uint32_t lru, int64_t now_ms) {
  uint32_t clock = lru_clock(now_ms);
  if (clock >= lru) {
    return static_cast<int64_t>(clock - lru) * k_lru_resolution_ms;
  }
  return static_cast<int64_t>(clock + (k_lru_clock_max - lru)) * k_lru_resolution_ms;
}

uint8_t lfu_counter(uint32_t lru, int64_t now_ms, int decay_time) {
  uint32_t ldt = lru >> 8;
  uint32_t counter = lru & 255;
  uint32_t now = lfu_minutes(now_ms);
  uint32_t elapsed = now >= ldt ? now - ldt : 65535 - ldt + now;
  uint32_t periods = decay_time > 0 ? elapsed / static_cast<uint32_t>(decay_time) : 0;
  return static_cast<uint8_t>(periods > counter ? 0 : counter - periods);
}

uint32_t lfu_field(uint8_t counter, int64_t now_ms) {
  return (lfu_minutes(now_ms) << 8) | counter;
}

Entry::ValueSpec clone_value(const Entry* e) {
  Entry::ValueSpec spec;
  spec.kind = e->kind();
  spec.type = e->type();
  spec.encoding = e->encoding();
  switch (spec.kind) {
    case Entry::Kind::integer:
      spec.integer = e->integer();
      break;
    case Entry::Kind::object:
      spec.object = e->object()->clone();
      break;
    case Entry::Kind::blob: {
      // An exact-size copy: the copy's capacity need not match the source's.
      size_t n = e->blob_size();
      if (n > 0) {  // 0: a key still being filled holds no block yet
        spec.blob = static_cast<uint8_t*>(MemoryCounter::raw_allocate(n));
        std::memcpy(spec.blob, e->blob(), n);
      }
      break;
    }
    case Entry::Kind::inline_bytes:
      spec.bytes = e->inline_bytes();
      break;
  }
  return spec;
}

Db::Db(int id, KeyspaceShared& shared, uint64_t seed)
    : m_id(id), m_shared(&shared), m_table(*shared.memory, seed) {}

Db::~Db() {
  flush();
}

void Db::touch_entry(Entry* e) {
  int64_t now = m_shared->now_ms();
  const KeyspaceSettings& cfg = *m_shared->settings;
  if (is_lfu(cfg.maxmemory_policy)) {
    uint8_t counter = lfu_counter(e->lru(), now, cfg.lfu_decay_time);
    if (counter != 255) {
      double r = std::uniform_real_distribution<double>(0.0, 1.0)(*m_shared->rng);
      double base = counter > k_lfu_init_val ? counter - k_lfu_init_val : 0;
      double p = 1.0 / (base * cfg.lfu_log_factor + 1);
      if (r < p) {
        ++counter;
      }
    }
    e->set_lru(lfu_field(counter, now));
  } else {
    e->set_lru(lru_clock(now));
  }
}

Entry* Db::lookup(std::string_view key, bool touch) {
  Entry** link = find_link(key);
  if (link == nullptr) {
    return nullptr;
  }
  Entry* e = *link;
  if (is_expired(e)) {
    if (!m_shared->keep_expired) {
      unlink_expired(link);
    }
    return nullptr;
  }
  if (touch) {
    touch_entry(e);
  }
  return e;
}

Entry* Db::lookup_read(std::string_view key) {
  return lookup_read(key, true);
}

Entry* Db::lookup_read(std::string_view key, bool touch) {
  Entry* e = lookup(key, touch);
  if (e != nullptr) {
    ++m_shared->keyspace_hits;
  } else {
    ++m_shared->keyspace_misses;
    if (m_shared->events != nullptr && m_shared->settings->notify_keyspace_events != 0) {
      m_shared->events->on_key_miss(m_id, key);
    }
  }
  return e;
}

void Db::unlink_expired(Entry** link) {
  Entry* e = m_table.unlink(link);
  std::string key(e->key());
  free_entry(e);
  ++m_shared->expired_keys;
  if (m_shared->events != nullptr) {
    m_shared->events->on_expired(m_id, key);
  }
}

void Db::index_expire(Entry* e) {
  e->set_expire_slot(static_cast<uint32_t>(m_expires.size()));
  m_expires.push_back(e);
}

void Db::unindex_expire(Entry* e) {
  uint32_t slot = e->expire_slot();
  Entry* last = m_expires.back();
  m_expires[slot] = last;
  last->set_expire_slot(slot);
  m_expires.pop_back();
}

void Db::free_entry(Entry* e) {
  if (e->has_expire()) {
    unindex_expire(e);
  }
  Entry::destroy(*m_shared->memory, e);
}

void Db::replace_entry(Entry** link, Entry* old_e, Entry* new_e) {
  m_table.replace(link, new_e);
  if (old_e->has_expire() && new_e->has_expire()) {
    // The new entry takes the old one's slot, and must know it: a later unindex_expire
    // moves the last entry into the slot the entry names.
    uint32_t slot = old_e->expire_slot();
    m_expires[slot] = new_e;
    new_e->set_expire_slot(slot);
  } else if (old_e->has_expire()) {
    unindex_expire(old_e);
  } else if (new_e->has_expire()) {
    index_expire(new_e);
  }
}

Entry* Db::add(std::string_view key, const Entry::ValueSpec& value, int64_t expire_ms) {
  if (m_shared->keep_expired) {
    // A lookup left the stale key in place; a write that adds the key replaces it.
    if (Entry** link = find_link(key); link != nullptr && is_expired(*link)) {
      unlink_expired(link);
    }
  }
  Entry* e = Entry::make(*m_shared->memory, key, value, expire_ms);
  m_shared->memory->add(static_cast<int64_t>(spec_value_bytes(value)));
  touch_entry(e);
  if (is_lfu(m_shared->settings->maxmemory_policy)) {
    e->set_lru(lfu_field(k_lfu_init_val, m_shared->now_ms()));
  }
  m_table.insert(e, m_table.hash(key));
  if (e->has_expire()) {
    index_expire(e);
  }
  register_if_hash_with_field_ttls(e);
  announce_new_key(e->key());
  return e;
}

void Db::announce_new_key(std::string_view key) {
  if (m_shared->events != nullptr && m_shared->settings->notify_keyspace_events != 0) {
    m_shared->events->on_new_key(m_id, key);
  }
}

Entry* Db::set(std::string_view key, const Entry::ValueSpec& value, int64_t expire_ms,
               bool keep_ttl) {
  Entry** link = find_link(key);
  if (link != nullptr && is_expired(*link)) {
    // As Valkey's setKey after its lookup: the stale key expires, then a new one is added.
    unlink_expired(link);
    link = nullptr;
  }
  if (link == nullptr) {
    return add(key, value, expire_ms);
  }
  Entry* old_e = *link;
  int64_t new_expire = expire_ms;
  if (keep_ttl && old_e->has_expire() && expire_ms < 0) {
    new_expire = old_e->expire_ms();
  }
  bool want_expire = new_expire >= 0;
  m_shared->memory->add(static_cast<int64_t>(spec_value_bytes(value)));
  if (want_expire == old_e->has_expire() && old_e->fits(*m_shared->memory, value)) {
    old_e->assign(*m_shared->memory, value);
    if (want_expire) {
      old_e->set_expire_ms(new_expire);
    }
    touch_entry(old_e);
    register_if_hash_with_field_ttls(old_e);
    return old_e;
  }
  Entry* e = Entry::make(*m_shared->memory, key, value, new_expire);
  e->set_lru(old_e->lru());
  replace_entry(link, old_e, e);
  Entry::destroy(*m_shared->memory, old_e);
  touch_entry(e);
  register_if_hash_with_field_ttls(e);
  return e;
}

bool Db::remove(std::string_view key) {
  Entry** link = find_link(key);
  if (link == nullptr) {
    return false;
  }
  if (is_expired(*link)) {
    unlink_expired(link);
    return false;
  }
  free_entry(m_table.unlink(link));
  return true;
}

void Db::remove_entry(Entry* e) {
  Entry** link = find_link(e->key());
  if (link != nullptr) {
    free_entry(m_table.unlink(link));
  }
}

Entry* Db::detach(std::string_view key) {
  Entry** link = find_link(key);
  if (link == nullptr) {
    return nullptr;
  }
  if (is_expired(*link)) {
    unlink_expired(link);
    return nullptr;
  }
  Entry* e = m_table.unlink(link);
  if (e->has_expire()) {
    unindex_expire(e);
  }
  return e;
}

void Db::attach(Entry* e) {
  m_table.insert(e, m_table.hash(e->key()));
  if (e->has_expire()) {
    index_expire(e);
  }
  register_if_hash_with_field_ttls(e);
  announce_new_key(e->key());
}

Entry* Db::attach_renamed(Entry* e, std::string_view new_key) {
  // Re-create the entry under the new name, moving the value.
  Entry::ValueSpec spec;
  spec.kind = e->kind();
  spec.type = e->type();
  spec.encoding = e->encoding();
  if (spec.kind == Entry::Kind::integer) {
    spec.integer = e->integer();
  } else if (spec.kind == Entry::Kind::object) {
    spec.object = e->object();
  } else if (spec.kind == Entry::Kind::blob) {
    spec.blob = e->blob();
  } else {
    spec.bytes = e->inline_bytes();
  }
  Entry* n = Entry::make(*m_shared->memory, new_key, spec, e->has_expire() ? e->expire_ms() : -1);
  n->set_lru(e->lru());
  Entry::destroy_shell(*m_shared->memory, e);
  attach(n);
  return n;
}

Entry* Db::set_expire(Entry* e, int64_t when_ms) {
  if (e->has_expire()) {
    e->set_expire_ms(when_ms);
    return e;
  }
  Entry** link = find_link(e->key());
  Entry* n = Entry::relayout(*m_shared->memory, e, true);
  n->set_expire_ms(when_ms);
  replace_entry(link, e, n);
  Entry::destroy_shell(*m_shared->memory, e);
  return n;
}

Entry* Db::persist(Entry* e) {
  if (!e->has_expire()) {
    return e;
  }
  Entry** link = find_link(e->key());
  Entry* n = Entry::relayout(*m_shared->memory, e, false);
  replace_entry(link, e, n);
  Entry::destroy_shell(*m_shared->memory, e);
  return n;
}

Entry* Db::random_entry() {
  return m_table.random(*m_shared->rng);
}

Entry* Db::random_volatile_entry() {
  if (m_expires.empty()) {
    return nullptr;
  }
  return m_expires[(*m_shared->rng)() % m_expires.size()];
}

size_t Db::flush() {
  size_t n = m_table.size();
  m_table.clear([this](Entry* e) { Entry::destroy(*m_shared->memory, e); });
  m_expires.clear();
  m_expires.shrink_to_fit();
  m_avg_ttl = 0;
  m_field_expiry.clear();
  return n;
}

void Db::swap_contents(Db& other) {
  // Tables hold no back-pointer to their database, so swapping the members is enough.
  m_table.swap(other.m_table);
  std::swap(m_expires, other.m_expires);
  std::swap(m_avg_ttl, other.m_avg_ttl);
  std::swap(m_field_expiry, other.m_field_expiry);
}

void Db::register_if_hash_with_field_ttls(const Entry* e) {
  // A hash arriving under a new name (RENAME, MOVE, COPY, RESTORE) keeps expiring actively.
  if (e->type() == ObjType::hash && e->kind() == Entry::Kind::object) {
    const auto* hash = static_cast<const HashValue*>(e->object());
    if (hash->has_field_expires()) {
      register_field_expiry(e->key(), hash->min_expire());
    }
  }
}

void Db::register_field_expiry(std::string_view key, int64_t when_ms) {
  m_field_expiry.emplace(when_ms, std::string(key));
}

bool Db::pop_due_field_expiry(int64_t now_ms, std::string& key) {
  if (m_field_expiry.empty() || m_field_expiry.begin()->first > now_ms) {
    return false;
  }
  auto node = m_field_expiry.extract(m_field_expiry.begin());
  key = std::move(node.value().second);
  return true;
}

std::string Db::check_ttl_index() const {
  std::string problem;
  size_t volatile_entries = 0;
  m_table.for_each([&](const Entry* e) {
    if (!e->has_expire() || !problem.empty()) {
      return;
    }
    ++volatile_entries;
    uint32_t slot = e->expire_slot();
    if (slot >= m_expires.size() || m_expires[slot] != e) {
      problem = "key '" + std::string(e->key()) + "' has a TTL but index slot " +
                std::to_string(slot) + " does not point at it";
    }
  });
  if (problem.empty() && volatile_entries != m_expires.size()) {
    // Every volatile entry owns the distinct slot it names, so a larger index holds
    // pointers to entries that are no longer in the table.
    problem = "the TTL index holds " + std::to_string(m_expires.size()) + " entries for " +
              std::to_string(volatile_entries) + " keys with a TTL";
  }
  return problem;
}

size_t Db::active_expire(int64_t deadline_us, size_t* sampled_out) {
  size_t removed = 0;
  size_t sampled_total = 0;
  const Clock& clock = *m_shared->clock;
  int64_t now = m_shared->now_ms();
  while (!m_expires.empty()) {
    size_t expired = 0;
    size_t sampled = 0;
    int64_t ttl_sum = 0;
    size_t ttl_samples = 0;
    size_t n =
        m_expires.size() < k_expire_keys_per_loop ? m_expires.size() : k_expire_keys_per_loop;
    for (size_t i = 0; i < n && !m_expires.empty(); ++i) {
      Entry* e = m_expires[(*m_shared->rng)() % m_expires.size()];
      ++sampled;
      if (e->expire_ms() <= now) {
        Entry** link = find_link(e->key());
        unlink_expired(link);
        ++expired;
      } else {
        // Saturated: a few keys expiring near the end of time would overflow the sum.
        int64_t ttl = e->expire_ms() - now;
        ttl_sum = ttl > std::numeric_limits<int64_t>::max() - ttl_sum
                      ? std::numeric_limits<int64_t>::max()
                      : ttl_sum + ttl;
        ++ttl_samples;
      }
    }
    removed += expired;
    sampled_total += sampled;
    if (ttl_samples > 0) {
      int64_t avg = ttl_sum / static_cast<int64_t>(ttl_samples);
      // A running estimate, as Valkey does, so INFO does not jump around.
      m_avg_ttl = m_avg_ttl == 0 ? avg : (m_avg_ttl / 50) * 49 + (avg / 50);
    }
    if (expired * 100 <= sampled * k_expire_acceptable_stale_pct) {
      break;
    }
    if (clock.monotonic_us() > deadline_us) {
      break;
    }
  }
  if (sampled_out != nullptr) {
    *sampled_out = sampled_total;
  }
  return removed;
}

}  // namespace keyshift::engine

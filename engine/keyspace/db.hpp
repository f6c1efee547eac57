#pragma once

#include "engine/keyspace/chained_table.hpp"
#include "engine/keyspace/entry.hpp"
#include "engine/keyspace/settings.hpp"
#include "engine/util/clock.hpp"
#include "engine/util/hash.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace keyshift::engine {

/// Told about keyspace changes that happen outside a command's own work (lazy and active
/// expiry, eviction), so the engine can count them and notify watchers.
class KeyspaceEvents {
 public:
  virtual ~KeyspaceEvents() = default;
  /// `key` in database `db` expired and was removed.
  virtual void on_expired(int db, std::string_view key) = 0;
  /// `key` was added to database `db` (Valkey's "new" event, fired by dbAdd).
  virtual void on_new_key(int db, std::string_view key) = 0;
  /// A read found no `key` in database `db` (Valkey's "keymiss" event).
  virtual void on_key_miss(int db, std::string_view key) = 0;
};

/// State every database of one engine shares.
struct KeyspaceShared {
  MemoryCounter* memory = nullptr;
  const Clock* clock = nullptr;
  /// The engine's settings (its EngineConfig, which derives from them).
  const KeyspaceSettings* settings = nullptr;
  KeyspaceEvents* events = nullptr;
  std::mt19937_64* rng = nullptr;
  uint64_t keyspace_hits = 0;
  uint64_t keyspace_misses = 0;
  uint64_t expired_keys = 0;
  uint64_t expired_stale_perc_permille = 0;
  uint64_t expire_cycle_time_used_us = 0;
  /// Cached "now" for the current command so one command sees one time (as Valkey's
  /// cmd_time_snapshot); 0 means read the clock.
  int64_t command_time_ms = 0;
  /// While set (CLIENT PAUSE), lookups hide logically expired keys without deleting them,
  /// so the dataset stays as it was (Valkey's paused expire action).
  bool keep_expired = false;
  int64_t now_ms() const { return command_time_ms != 0 ? command_time_ms : clock->now_ms(); }
};

struct EntryTraits {
  static Entry*& next(Entry* e) { return e->next(); }
  static std::string_view key(const Entry* e) { return e->key(); }
  static uint64_t hash(std::string_view key, uint64_t seed) { return hash_bytes(key, seed); }
};

/// One numbered database: the key table and its TTL index.
class Db {
 public:
  using Table = ChainedTable<Entry, EntryTraits>;

  Db(int id, KeyspaceShared& shared, uint64_t seed);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  /// This database's number.
  int id() const { return m_id; }
  /// Number of keys (including expired ones not yet reclaimed).
  size_t size() const { return m_table.size(); }
  /// Number of keys with a TTL.
  size_t expires_size() const { return m_expires.size(); }

  /// The live entry for `key`, expiring it first if its time has passed; updates the
  /// access time (LRU/LFU) unless `touch` is false.
  Entry* lookup(std::string_view key, bool touch = true);
  /// Like `lookup` but also counts a keyspace hit or miss (read commands).
  Entry* lookup_read(std::string_view key);
  /// `lookup_read` that may leave the access time alone (EXISTS, TYPE, TTL, OBJECT and
  /// CLIENT NO-TOUCH sessions read without touching, but still count hits and misses).
  Entry* lookup_read(std::string_view key, bool touch);
  /// True if `key` exists and is live, without touching it.
  bool exists(std::string_view key) { return lookup(key, false) != nullptr; }

  /// Stores `value` under `key`, replacing any value. The TTL is kept only when
  /// `keep_ttl`; `expire_ms` >= 0 sets a new one. Returns the entry.
  Entry* set(std::string_view key, const Entry::ValueSpec& value, int64_t expire_ms = -1,
             bool keep_ttl = false);
  /// A secret seed for the hashtable of the value at `key`, drawn from this database's
  /// table seed: a small value kept as a bare block has nowhere to keep one of its own.
  uint64_t value_seed(std::string_view key) const { return ~m_table.hash(key); }
  /// Adds a new key; the key must not exist (live or expired: call lookup first).
  Entry* add(std::string_view key, const Entry::ValueSpec& value, int64_t expire_ms = -1);
  /// Sizes an empty database's table for `keys` keys (RDB loading's RESIZEDB hint).
  void reserve(size_t keys) { m_table.reserve(keys); }
  /// Removes `key`; returns true if a live key was removed.
  bool remove(std::string_view key);
  /// Moves the entry for `key` out of this database without freeing it (MOVE, RENAME).
  Entry* detach(std::string_view key);
  /// Links an entry detached from another database under its own key (which must not exist).
  void attach(Entry* e);
  /// Links an entry under `new_key`, re-creating it with that name; frees `e`.
  Entry* attach_renamed(Entry* e, std::string_view new_key);

  /// Sets the TTL of the live `key` to `when_ms`; returns the (possibly moved) entry.
  Entry* set_expire(Entry* e, int64_t when_ms);
  /// Removes the TTL of the entry; returns the (possibly moved) entry.
  Entry* persist(Entry* e);
  /// True if `e` has a TTL that has passed.
  bool is_expired(const Entry* e) const {
    return e->has_expire() && e->expire_ms() <= m_shared->now_ms();
  }

  /// Calls `fn(Entry*)` for keys in the cursor's buckets; returns the next cursor.
  template <typename Fn>
  uint64_t scan(uint64_t cursor, Fn&& fn) {
    return m_table.scan(cursor, std::forward<Fn>(fn));
  }
  /// Calls `fn(Entry*)` for every key, live or not; `fn` must not modify the database.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    m_table.for_each(std::forward<Fn>(fn));
  }
  /// A random entry (possibly expired), or nullptr when empty.
  Entry* random_entry();
  /// A random entry among those with a TTL, or nullptr.
  Entry* random_volatile_entry();
  /// Removes every key; returns how many there were.
  size_t flush();
  /// Swaps the contents of two databases (SWAPDB).
  void swap_contents(Db& other);

  /// Samples keys with a TTL and removes expired ones, as Valkey's active expire cycle.
  /// Returns the number removed; stops when `deadline_us` (monotonic) passes.
  size_t active_expire(int64_t deadline_us, size_t* sampled = nullptr);
  /// Average remaining TTL of sampled keys in ms (INFO keyspace avg_ttl), 0 if none.
  int64_t avg_ttl() const { return m_avg_ttl; }
  /// Does a bounded amount of incremental rehashing (server cron).
  bool rehash_step(size_t buckets) { return m_table.rehash(buckets); }
  /// Bucket count, for memory figures.
  size_t buckets() const { return m_table.buckets(); }
  /// Updates the access metadata of `e` (LRU clock or LFU counter) per the policy.
  void touch_entry(Entry* e);
  /// Removes `e` (found with lookup) without expiry checks; used by eviction.
  void remove_entry(Entry* e);

  // --- Hashes with field TTLs (active field expiry). A registration is a hint: the key
  // --- may since have been deleted, renamed or rewritten, so whoever pops one re-checks.
  /// Notes that the hash at `key` has a field due at `when_ms`.
  void register_field_expiry(std::string_view key, int64_t when_ms);
  /// Pops the earliest registration due at `now_ms` into `key`; false when none is due.
  bool pop_due_field_expiry(int64_t now_ms, std::string& key);
  /// Number of registrations (stale ones included).
  size_t field_expiry_registrations() const { return m_field_expiry.size(); }

  /// Checks that the TTL index and the table agree: every entry with a TTL sits in the
  /// index exactly once, at the slot it records, and the index holds nothing else. Returns
  /// what is wrong, or an empty string. Linear in the database: for tests and DEBUG.
  std::string check_ttl_index() const;

 private:
  Entry** find_link(std::string_view key) { return m_table.find_link(key, m_table.hash(key)); }
  void announce_new_key(std::string_view key);
  void unlink_expired(Entry** link);
  void index_expire(Entry* e);
  void unindex_expire(Entry* e);
  void replace_entry(Entry** link, Entry* old_e, Entry* new_e);
  void free_entry(Entry* e);
  void register_if_hash_with_field_ttls(const Entry* e);

  int m_id;
  KeyspaceShared* m_shared;
  Table m_table;
  std::vector<Entry*> m_expires;
  int64_t m_avg_ttl = 0;
  std::set<std::pair<int64_t, std::string>> m_field_expiry;  // (due ms, hash key)
};

/// A deep copy of the value of `e` as a ValueSpec for `Db::add`/`Db::set` (COPY): heap
/// objects are cloned (the spec owns the clone until it is stored); inline bytes still point
/// into `e`, so `e` must outlive the use of the spec.
Entry::ValueSpec clone_value(const Entry* e);

/// True for the LFU eviction policies (the LRU field then holds an LFU counter).
bool is_lfu(EvictionPolicy p);
/// LRU clock value (seconds, 24 bits) for a time in ms.
uint32_t lru_clock(int64_t now_ms);
/// Idle time in ms of an entry whose LRU field is `lru`.
int64_t lru_idle_ms(uint32_t lru, int64_t now_ms);
/// LFU counter (0-255) of an entry's LRU field after decay to `now_ms`.
uint8_t lfu_counter(uint32_t lru, int64_t now_ms, int decay_time);
/// The LRU field for an LFU counter `counter` at `now_ms`.
uint32_t lfu_field(uint8_t counter, int64_t now_ms);

}  // namespace keyshift::engine

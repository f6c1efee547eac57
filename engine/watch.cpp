#include "engine/watch.hpp"

#include "engine/engine.hpp"
#include "engine/session.hpp"

#include <algorithm>

namespace keyshift::engine {

WatchTable::KeyMap& WatchTable::keys_of(int db) {
  if (static_cast<size_t>(db) >= m_by_db.size()) {
    m_by_db.resize(static_cast<size_t>(db) + 1);
  }
  return m_by_db[static_cast<size_t>(db)];
}

void WatchTable::watch(Session& s, int db, std::string_view key) {
  for (const WatchedKey& wk : s.watched_keys) {
    if (wk.db == db && wk.key == key) {
      return;
    }
  }
  if (s.watched_keys.empty()) {
    ++m_watching_clients;
  }
  KeyMap& keys = keys_of(db);
  auto it = keys.find(key);
  if (it == keys.end()) {
    it = keys.emplace(std::string(key), std::vector<Session*>{}).first;
  }
  it->second.push_back(&s);
  s.watched_keys.push_back({db, std::string(key), m_engine.key_is_expired(db, key)});
}

void WatchTable::unwatch_all(Session& s) {
  if (s.watched_keys.empty()) {
    return;
  }
  for (const WatchedKey& wk : s.watched_keys) {
    KeyMap& keys = keys_of(wk.db);
    auto it = keys.find(wk.key);
    if (it == keys.end()) {
      continue;
    }
    std::erase(it->second, &s);
    if (it->second.empty()) {
      keys.erase(it);
    }
  }
  s.watched_keys.clear();
  --m_watching_clients;
}

bool WatchTable::any_expired(Session& s) {
  return std::any_of(s.watched_keys.begin(), s.watched_keys.end(), [&](const WatchedKey& wk) {
    return !wk.expired && m_engine.key_is_expired(wk.db, wk.key);
  });
}

void WatchTable::mark_dirty(Session& s) {
  s.set(k_session_dirty_cas);
  // A failed transaction need not keep its queued commands (Valkey frees them too).
  s.multi_queue.clear();
  s.multi_cmd_flags = 0;
}

void WatchTable::touch(int db, std::string_view key) {
  if (static_cast<size_t>(db) >= m_by_db.size() || m_by_db[static_cast<size_t>(db)].empty()) {
    return;
  }
  KeyMap& keys = m_by_db[static_cast<size_t>(db)];
  auto it = keys.find(key);
  if (it == keys.end()) {
    return;
  }
  std::vector<Session*> watchers = it->second;  // unwatch_all below edits the list
  for (Session* s : watchers) {
    auto wk = std::find_if(s->watched_keys.begin(), s->watched_keys.end(),
                           [&](const WatchedKey& w) { return w.db == db && w.key == key; });
    if (wk == s->watched_keys.end()) {
      continue;
    }
    if (wk->expired) {
      // The key was stale when WATCH ran: its deletion is no logical change. Anything else
      // ends the walk over the watchers, as Valkey 8.0's loop does.
      if (m_engine.find_entry_raw(db, key) == nullptr) {
        wk->expired = false;
        continue;
      }
      break;
    }
    mark_dirty(*s);
    unwatch_all(*s);
  }
}

void WatchTable::touch_all_in_db(int emptied, int replaced_with) {
  if (static_cast<size_t>(emptied) >= m_by_db.size()) {
    return;
  }
  KeyMap& keys = m_by_db[static_cast<size_t>(emptied)];
  for (auto& [key, watchers] : keys) {
    bool in_emptied = m_engine.find_entry_raw(emptied, key) != nullptr;
    bool in_replacement =
        replaced_with >= 0 && m_engine.find_entry_raw(replaced_with, key) != nullptr;
    if (!in_emptied && !in_replacement) {
      continue;
    }
    for (Session* s : watchers) {
      auto wk = std::find_if(s->watched_keys.begin(), s->watched_keys.end(),
                             [&](const WatchedKey& w) { return w.db == emptied && w.key == key; });
      if (wk == s->watched_keys.end()) {
        continue;
      }
      if (wk->expired) {
        if (!in_replacement) {
          wk->expired = false;  // a stale key deleted: no logical change
          continue;
        }
        if (m_engine.key_is_expired(replaced_with, key)) {
          continue;  // stale replaced by stale
        }
      } else if (!in_emptied && m_engine.key_is_expired(replaced_with, key)) {
        wk->expired = true;  // nothing replaced by a stale key
        continue;
      }
      mark_dirty(*s);
    }
  }
}

size_t WatchTable::watched_keys() const {
  size_t n = 0;
  for (const KeyMap& keys : m_by_db) {
    n += keys.size();
  }
  return n;
}

}  // namespace keyshift::engine

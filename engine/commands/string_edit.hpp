#pragma once

#include "engine/keyspace/db.hpp"
#include "engine/keyspace/string_value.hpp"
#include "engine/util/memory.hpp"

#include <string>
#include <string_view>
#include <utility>

// In-place edits of string values, shared by the string and bitmap families: APPEND,
// SETRANGE, SETBIT and BITFIELD change a long string where it lives, as Valkey's
// sdsMakeRoomFor does, instead of copying the whole value twice per call (a SETBIT near
// the end of a 512 MB bitmap touched 1 GB).
namespace keyshift::engine {

/// Lets `fn(std::string&)` edit the string value of `e` (at `key` in `db`): in place when
/// the entry holds a HeapString (its memory counted again in `mem`), otherwise on a copy
/// that then replaces the value, keeping the TTL. The result is raw-encoded either way.
template <typename Fn>
void edit_string(Db& db, Entry* e, std::string_view key, MemoryCounter& mem, Fn&& fn) {
  if (e->kind() == Entry::Kind::object) {
    auto* hs = static_cast<HeapString*>(e->object());
    size_t before = hs->bytes();
    fn(hs->data());
    mem.add(static_cast<int64_t>(hs->bytes()) - static_cast<int64_t>(before));
    e->set_encoding(ObjEncoding::raw);
    return;
  }
  IntBuffer buf;
  std::string s(string_of(e, buf));
  fn(s);
  db.set(key, make_raw_string_spec(std::move(s)), -1, true);
}

}  // namespace keyshift::engine

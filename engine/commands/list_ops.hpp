#pragma once

// List operations shared by the list family and the blocking list commands (BLPOP, BRPOP,
// BLMPOP, BLMOVE, BRPOPLPUSH), which serve a ready key exactly as the non-blocking command
// would: same elements, same key deletion, same signals and keyspace events.

#include "engine/keyspace/list_value.hpp"
#include "engine/util/status.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

class Engine;
class Db;

/// The limits lists of `engine` use (list-max-listpack-size, list-compress-depth).
ListLimits list_limits(const Engine& engine);

/// Pops up to `count` (>= 1) elements from `side` of the list at `key` in `db`, in pop
/// order. Emits "lpop"/"rpop", deletes an emptied key (emitting "del"), otherwise lets the
/// list shrink back to a listpack, and signals the key as modified. Returns key_not_found
/// when the key is missing, wrong_type when it is not a list.
Result<std::vector<std::string>> list_pop(Engine& engine, Db& db, std::string_view key,
                                          ListSide side, size_t count);

/// LMOVE: pops from `from` of `src` and pushes onto `to` of `dst` (created if missing;
/// `src` == `dst` rotates). Returns the moved element, nullopt when `src` is missing (then
/// nothing is checked further), wrong_type when `src` or `dst` holds another type. Emits
/// "lpush"/"rpush" on `dst`, then "lpop"/"rpop" (and "del") on `src`, signals both keys and
/// signals `dst` as ready for blocked clients.
Result<std::optional<std::string>> list_move(Engine& engine, Db& db, std::string_view src,
                                             std::string_view dst, ListSide from, ListSide to);

/// Parses "LEFT" / "RIGHT" (any case) into `side`; false on anything else (syntax error).
bool parse_list_side(std::string_view arg, ListSide& side);

}  // namespace keyshift::engine

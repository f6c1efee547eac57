#pragma once

#include "engine/persistence/rdb_reader.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace keyshift::engine {
class Engine;
}

// Reading back the JSON Lines that `keyshift rdb dump` writes: one key per line, as the
// neutral values the RDB reader produces, so anything that takes those (an engine load,
// verify, import) takes a dump too.
namespace keyshift::compat {

/// One line of a dump: the key as the RDB reader would give it (`offset` is the line's
/// byte offset), or an error saying what is wrong with the line.
engine::Expected<engine::RdbKey, std::string> parse_dump_line(std::string_view line);

/// Calls `on_key` for every line of `text` in order (blank lines skipped); stops at the
/// first bad line ("line N: why") or when `on_key` returns an error text.
engine::Expected<uint64_t, std::string> read_dump_lines(
    std::string_view text,
    const std::function<engine::Expected<bool, std::string>(engine::RdbKey&)>& on_key);

/// Loads every key of a dump into `engine`'s databases, skipping keys already expired as a
/// server's load does; a key given twice, a module key or a value the engine cannot build
/// is an error naming the line. Returns the keys loaded.
engine::Expected<uint64_t, std::string> load_jsonl(engine::Engine& engine, std::string_view text);

}  // namespace keyshift::compat

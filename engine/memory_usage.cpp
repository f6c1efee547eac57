#include "engine/memory_usage.hpp"

#include "engine/engine.hpp"

#include <algorithm>

namespace keyshift::engine {
namespace {

/// Valkey 8's used_memory_startup on an empty 64-bit server is about 900 KB; keyshift's
/// equivalents (registry, Lua state, shared replies) are not counted byte by byte, so
/// this estimate stands in for them.
constexpr uint64_t k_startup_overhead_bytes = 850 * 1024;

}  // namespace

uint64_t startup_memory(const Engine& engine) {
  return k_startup_overhead_bytes + sizeof(Engine) +
         static_cast<uint64_t>(engine.db_count()) * sizeof(Db);
}

uint64_t clients_memory(const Engine& engine) {
  uint64_t bytes = 0;
  for (const auto& [id, s] : engine.sessions()) {
    bytes += sizeof(Session) + s->out.capacity() + s->query_buffer_bytes;
  }
  return bytes;
}

uint64_t clients_state_memory(const Engine& engine) {
  return engine.sessions().size() * sizeof(Session);
}

uint64_t peak_memory(Engine& engine) {
  return std::max(startup_memory(engine) + engine.memory().peak(), engine.used_memory());
}

}  // namespace keyshift::engine

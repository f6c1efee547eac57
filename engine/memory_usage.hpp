#pragma once

#include <cstdint>

namespace keyshift::engine {

class Engine;

/// The fixed part of Engine::used_memory(), as Valkey's used_memory_startup: what a server
/// holds before any key or client (command table, shared objects, scripting VM, the
/// databases) that the memory counter does not see.
uint64_t startup_memory(const Engine& engine);
/// Bytes held by the connected clients: per-client state plus query and reply buffers
/// (INFO mem_clients_normal).
uint64_t clients_memory(const Engine& engine);
/// The clients' part of used_memory(): their per-client state without the buffers. keyshift
/// reads and answers a whole pipeline at once where Valkey works through it 16 KB at a time,
/// so counting the buffers would evict or refuse for a pipeline Valkey takes within limits.
uint64_t clients_state_memory(const Engine& engine);
/// Highest used_memory() seen: the counter's peak over the fixed part, or now.
uint64_t peak_memory(Engine& engine);

}  // namespace keyshift::engine

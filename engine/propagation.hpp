#pragma once

// What the engine hands to whoever keeps a copy of its writes (the AOF today, a replication
// stream later): Valkey's propagate()/alsoPropagate(). Each executed write becomes its
// effects (EXPIRE as PEXPIREAT, SET EX as SET PXAT, SPOP as SREM, a served BLPOP as LPOP,
// XADD * with the generated ID, ...: commands/effects.hpp), tagged with the database it
// ran in. A top-level command (a transaction, or later a script) is one unit; a unit of
// several commands is carried inside MULTI/EXEC. Expired and evicted keys are their own
// units (UNLINK or DEL, as lazyfree-lazy-expire/eviction say).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace keyshift::engine {

/// One propagated command and the database it applies to.
struct PropagatedCommand {
  int db = 0;
  std::vector<std::string> argv;
};

/// A receiver of propagated units, registered with Engine::add_propagation_sink.
class PropagationSink {
 public:
  virtual ~PropagationSink() = default;
  /// The effects of one unit, in execution order (never empty).
  virtual void propagate(std::span<const PropagatedCommand> unit) = 0;
};

/// Appends `unit` as RESP commands to `out` as Valkey writes its AOF and replication
/// stream: a SELECT before a command whose database differs from `selected_db` (which is
/// updated; -1 forces one), and MULTI/EXEC around a unit of more than one command.
void encode_propagated(std::span<const PropagatedCommand> unit, int& selected_db, std::string& out);

/// Appends one command in RESP multibulk form.
void encode_command(std::span<const std::string> argv, std::string& out);

}  // namespace keyshift::engine

#include "engine/pause.hpp"

#include "engine/commands/command.hpp"
#include "engine/engine.hpp"
#include "engine/scripting/script_engine.hpp"

#include <algorithm>
#include <string>

namespace keyshift::engine {

void ClientPause::pause_by_client(int64_t end_ms, bool all) {
  uint32_t actions = all ? k_pause_all : k_pause_write;
  if ((m_requested & k_pause_all) != 0) {
    actions = k_pause_all;  // the stricter pause in force wins
  }
  m_requested = actions;
  m_end_ms = std::max(m_end_ms, end_ms);
  recompute();
}

void ClientPause::unpause_by_client() {
  m_requested = 0;
  m_end_ms = 0;
  recompute();
}

void ClientPause::recompute() {
  uint32_t before = m_actions;
  if (m_end_ms > m_engine.clock().now_ms()) {
    m_actions = m_requested;
  } else {
    m_requested = 0;
    m_end_ms = 0;
    m_actions = 0;
  }
  m_engine.keyspace().keep_expired = m_actions != 0;
  // ALL > WRITE > none, as Valkey compares its action bits.
  if (m_actions < before) {
    m_released = true;
  }
}

bool ClientPause::holds(uint32_t cmd_flags) const {
  return (m_actions & k_pause_all) != 0 || ((m_actions & k_pause_write) != 0 &&
                                            (cmd_flags & (k_cmd_write | k_cmd_may_replicate)) != 0);
}

namespace {

/// A script's command flags from its declared flags (Valkey's scriptFlagsToCmdFlags):
/// the declaration says whether it writes, and MAY_REPLICATE no longer applies.
uint32_t declared_command_flags(uint32_t flags, uint64_t script_flags) {
  flags &= ~static_cast<uint32_t>(k_cmd_write | k_cmd_may_replicate);
  if ((script_flags & k_script_no_writes) == 0) {
    flags |= k_cmd_write;
  }
  return flags;
}

}  // namespace

uint32_t ClientPause::command_flags(const Command& cmd,
                                    std::span<const std::string_view> argv) const {
  uint32_t flags = cmd.spec.flags;
  const std::string& name = cmd.full_name;
  if ((name == "fcall" || name == "fcall_ro") && argv.size() >= 2) {
    // As Valkey's fcallGetCommandFlags: the function's declared flags decide.
    std::optional<uint64_t> declared = m_engine.scripting().function_flags(argv[1]);
    return declared ? declared_command_flags(flags, *declared) : flags;
  }
  bool by_sha = name == "evalsha" || name == "evalsha_ro";
  if ((!by_sha && name != "eval" && name != "eval_ro") || argv.size() < 2 ||
      (by_sha && argv[1].size() != 40)) {
    return flags;
  }
  std::string_view body = argv[1];
  if (by_sha) {
    const std::string* cached = m_engine.scripting().script_body(argv[1]);
    if (cached == nullptr) {
      return flags;
    }
    body = *cached;
  }
  uint64_t script_flags = 0;
  size_t shebang_len = 0;
  std::string error;
  if (!parse_script_shebang(body, script_flags, shebang_len, error) ||
      (script_flags & k_script_eval_compat) != 0) {
    return flags;
  }
  return declared_command_flags(flags, script_flags);
}

void ClientPause::postpone(Session& s, std::span<const std::string_view> argv) {
  s.postponed_argv.assign(argv.begin(), argv.end());
  s.set(k_session_postponed);
  m_postponed.push_back(&s);
}

void ClientPause::forget(Session& s) {
  if (s.has(k_session_postponed)) {
    std::erase(m_postponed, &s);
    s.clear(k_session_postponed);
    s.postponed_argv.clear();
  }
}

void ClientPause::update() {
  if (m_actions != 0) {
    recompute();
  }
  if (!m_released) {
    return;
  }
  m_released = false;
  std::vector<Session*> held;
  held.swap(m_postponed);
  for (Session* s : held) {
    s->clear(k_session_postponed);
    std::vector<std::string> argv = std::move(s->postponed_argv);
    s->postponed_argv.clear();
    std::vector<std::string_view> views(argv.begin(), argv.end());
    m_engine.execute(*s, views);
    if (s->host() != nullptr) {
      s->host()->wake(*s);
      if (!s->has(k_session_postponed)) {
        s->host()->resume(*s);
      }
    }
  }
}

int64_t ClientPause::next_end_ms() const {
  return !m_postponed.empty() && m_end_ms > 0 ? m_end_ms : -1;
}

}  // namespace keyshift::engine

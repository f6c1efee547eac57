#include "engine/blocking.hpp"

#include "engine/commands/context.hpp"
#include "engine/engine.hpp"
#include "engine/pubsub.hpp"
#include "engine/session.hpp"
#include "engine/util/strconv.hpp"

#include <climits>

#include <algorithm>
#include <cmath>

namespace keyshift::engine {
namespace {

constexpr std::string_view k_unblocked_error = errors::k_unblocked_via_client_unblock;

bool holds(const Entry* e, BlockType type) {
  switch (type) {
    case BlockType::list:
      return e->type() == ObjType::list;
    case BlockType::zset:
      return e->type() == ObjType::zset;
    case BlockType::stream:
      return e->type() == ObjType::stream;
    case BlockType::none:
      break;
  }
  return false;
}

void wake_and_resume(Session& s) {
  if (s.host() != nullptr) {
    s.host()->wake(s);
    s.host()->resume(s);
  }
}

}  // namespace

bool parse_block_timeout(CmdContext& ctx, std::string_view arg, int64_t& deadline_ms) {
  long double seconds = 0;
  if (!parse_long_double(arg, seconds)) {
    ctx.reply().error(errors::k_timeout_not_float);
    return false;
  }
  long double ms = seconds * 1000.0L;
  if (ms > static_cast<long double>(LLONG_MAX)) {
    ctx.reply().error(errors::k_timeout_out_of_range);
    return false;
  }
  long double rounded = std::ceil(ms);
  if (rounded < 0) {
    ctx.reply().error(errors::k_timeout_negative);
    return false;
  }
  auto t = static_cast<int64_t>(rounded);
  if (t > 0) {
    int64_t now = ctx.now_ms();
    if (t > INT64_MAX - now) {
      ctx.reply().error(errors::k_timeout_out_of_range);
      return false;
    }
    t += now;
  }
  deadline_ms = t;
  return true;
}

bool may_block(const CmdContext& ctx) {
  return !const_cast<CmdContext&>(ctx).session().has(k_session_deny_blocking);
}

void block_for_keys(CmdContext& ctx, std::span<const std::string_view> keys, BlockType type,
                    int64_t deadline_ms) {
  ctx.engine().blocking().block(ctx.session(), ctx.command(), ctx.args(), keys, type, deadline_ms);
}

void block_until_timeout(CmdContext& ctx, int64_t deadline_ms, BlockTimeoutReply timeout_reply) {
  Blocking& blocking = ctx.engine().blocking();
  blocking.block(ctx.session(), ctx.command(), ctx.args(), {}, BlockType::none, deadline_ms);
  blocking.set_timeout_reply(ctx.session(), timeout_reply);
}

Blocking::KeyMap& Blocking::keys_of(int db) {
  if (static_cast<size_t>(db) >= m_by_db.size()) {
    m_by_db.resize(static_cast<size_t>(db) + 1);
  }
  return m_by_db[static_cast<size_t>(db)];
}

void Blocking::block(Session& s, Command& cmd, std::span<const std::string_view> argv,
                     std::span<const std::string_view> keys, BlockType type, int64_t deadline_ms,
                     bool unblock_on_nokey) {
  BlockState& st = s.block;
  st = BlockState{};
  st.cmd = &cmd;
  st.unblock_on_nokey = unblock_on_nokey;
  st.argv.assign(argv.begin(), argv.end());
  st.db = s.db;
  st.type = static_cast<uint8_t>(type);
  // A command that runs again after its key was served to someone else keeps its deadline.
  st.deadline_ms = &s == m_reprocessing ? m_reprocessing_deadline : deadline_ms;
  st.blocked_at_us = m_engine.clock().monotonic_us();
  KeyMap& waiting = keys_of(s.db);
  for (std::string_view key : keys) {
    if (std::find(st.keys.begin(), st.keys.end(), key) != st.keys.end()) {
      continue;
    }
    st.keys.emplace_back(key);
    auto it = waiting.find(key);
    if (it == waiting.end()) {
      it = waiting.emplace(std::string(key), std::vector<Session*>{}).first;
    }
    it->second.push_back(&s);
  }
  if (st.deadline_ms != 0) {
    m_deadlines.emplace(st.deadline_ms, s.id());
  }
  s.set(k_session_blocked);
}

void Blocking::detach(Session& s) {
  BlockState& st = s.block;
  KeyMap& waiting = keys_of(st.db);
  for (const std::string& key : st.keys) {
    auto it = waiting.find(key);
    if (it == waiting.end()) {
      continue;
    }
    std::erase(it->second, &s);
    if (it->second.empty()) {
      waiting.erase(it);
    }
  }
  if (st.deadline_ms != 0) {
    m_deadlines.erase({st.deadline_ms, s.id()});
  }
  s.clear(k_session_blocked);
}

void Blocking::signal_ready(int db, std::string_view key) {
  if (static_cast<size_t>(db) >= m_by_db.size()) {
    return;
  }
  const KeyMap& waiting = m_by_db[static_cast<size_t>(db)];
  if (waiting.empty() || waiting.find(key) == waiting.end()) {
    return;
  }
  std::pair<int, std::string> id(db, std::string(key));
  if (m_ready_set.insert(id).second) {
    m_ready.push_back(std::move(id));
  }
}

void Blocking::signal_key_changed(int db, std::string_view key) {
  if (static_cast<size_t>(db) >= m_by_db.size()) {
    return;
  }
  const KeyMap& waiting = m_by_db[static_cast<size_t>(db)];
  auto it = waiting.find(key);
  if (it == waiting.end()) {
    return;
  }
  for (const Session* s : it->second) {
    if (s->block.unblock_on_nokey) {
      Entry* e = m_engine.find_entry_raw(db, key);
      if (e == nullptr || !holds(e, static_cast<BlockType>(s->block.type))) {
        signal_ready(db, key);
      }
      return;
    }
  }
}

void Blocking::signal_db_changed(int db) {
  if (static_cast<size_t>(db) >= m_by_db.size()) {
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [key, waiting] : m_by_db[static_cast<size_t>(db)]) {
    keys.push_back(key);
  }
  // Called before the flush or swap happens, so the keys are not looked at here: serving
  // them afterwards finds them gone (or swapped in) and the clients' commands answer that.
  for (const std::string& key : keys) {
    const std::vector<Session*>& sessions = m_by_db[static_cast<size_t>(db)].at(key);
    if (std::any_of(sessions.begin(), sessions.end(),
                    [](const Session* s) { return s->block.unblock_on_nokey; })) {
      signal_ready(db, key);
    }
  }
}

void Blocking::signal_existing_keys(int db) {
  if (static_cast<size_t>(db) >= m_by_db.size()) {
    return;
  }
  std::vector<std::string> keys;
  for (const auto& [key, waiting] : m_by_db[static_cast<size_t>(db)]) {
    keys.push_back(key);
  }
  for (const std::string& key : keys) {
    if (m_engine.find_entry_raw(db, key) != nullptr) {
      signal_ready(db, key);
    }
  }
}

void Blocking::serve_ready() {
  if (m_serving) {
    return;
  }
  m_serving = true;
  while (!m_ready.empty()) {
    std::vector<std::pair<int, std::string>> batch;
    batch.swap(m_ready);
    m_ready_set.clear();
    for (const auto& [db, key] : batch) {
      serve_key(db, key);
    }
  }
  m_serving = false;
}

void Blocking::serve_key(int db, const std::string& key) {
  KeyMap& waiting = keys_of(db);
  auto it = waiting.find(key);
  if (it == waiting.end()) {
    return;
  }
  // The clients blocked now, oldest first; one that blocks again joins the end of the
  // queue and waits for the next signal.
  std::vector<uint64_t> ids;
  ids.reserve(it->second.size());
  for (Session* s : it->second) {
    ids.push_back(s->id());
  }
  const auto& sessions = m_engine.sessions();
  for (uint64_t id : ids) {
    auto found = sessions.find(id);
    if (found == sessions.end()) {
      continue;
    }
    Session& s = *found->second;
    BlockState& st = s.block;
    if (!s.has(k_session_blocked) || st.db != db ||
        std::find(st.keys.begin(), st.keys.end(), key) == st.keys.end()) {
      continue;
    }
    Entry* e = m_engine.db(db).lookup(key, false);
    if ((e == nullptr || !holds(e, static_cast<BlockType>(st.type))) && !st.unblock_on_nokey) {
      continue;
    }
    BlockState saved = st;
    detach(s);
    st = BlockState{};
    std::vector<std::string_view> argv(saved.argv.begin(), saved.argv.end());
    m_reprocessing = &s;
    m_reprocessing_deadline = saved.deadline_ms;
    m_engine.pubsub().set_current(&s);
    m_engine.call(s, *saved.cmd, argv, true);
    m_engine.pubsub().flush_pending();
    m_engine.pubsub().set_current(nullptr);
    m_reprocessing = nullptr;
    if (!s.has(k_session_blocked)) {
      wake_and_resume(s);
    }
  }
}

void Blocking::finish(Session& s, Command* cmd, bool failed) {
  // As Valkey's updateStatsOnUnblock: the command counts once it has replied.
  if (cmd != nullptr) {
    ++cmd->stats.calls;
    if (failed) {
      ++cmd->stats.failed_calls;
    }
  }
  ++m_engine.stats().total_commands_processed;
  ++s.total_commands;
  wake_and_resume(s);
}

void Blocking::handle_timeouts(int64_t now_ms) {
  while (!m_deadlines.empty() && m_deadlines.begin()->first < now_ms) {
    uint64_t id = m_deadlines.begin()->second;
    m_deadlines.erase(m_deadlines.begin());
    auto found = m_engine.sessions().find(id);
    if (found == m_engine.sessions().end() || !found->second->has(k_session_blocked)) {
      continue;
    }
    Session& s = *found->second;
    Command* cmd = s.block.cmd;
    BlockTimeoutReply timeout_reply = take_timeout_reply(s);
    s.block.deadline_ms = 0;  // already out of the timeout index
    detach(s);
    s.block = BlockState{};
    if (timeout_reply != nullptr) {
      timeout_reply(m_engine, s);
    } else {
      ReplyBuilder(s.out, s.resp).null_array();
    }
    finish(s, cmd, false);
  }
}

int64_t Blocking::next_deadline_ms() const {
  return m_deadlines.empty() ? -1 : m_deadlines.begin()->first;
}

bool Blocking::unblock(Session& s, bool with_error) {
  if (!s.has(k_session_blocked)) {
    return false;
  }
  Command* cmd = s.block.cmd;
  BlockTimeoutReply timeout_reply = take_timeout_reply(s);
  detach(s);
  s.block = BlockState{};
  ReplyBuilder rb(s.out, s.resp);
  if (with_error) {
    rb.error(k_unblocked_error);
    ++m_engine.stats().total_error_replies;
    ++m_engine.stats().error_counts[std::string(rb.last_error_code())];
  } else if (timeout_reply != nullptr) {
    timeout_reply(m_engine, s);
  } else {
    rb.null_array();
  }
  finish(s, cmd, with_error);
  return true;
}

void Blocking::set_timeout_reply(Session& s, BlockTimeoutReply reply) {
  m_timeout_replies[s.id()] = reply;
}

BlockTimeoutReply Blocking::take_timeout_reply(Session& s) {
  auto it = m_timeout_replies.find(s.id());
  if (it == m_timeout_replies.end()) {
    return nullptr;
  }
  BlockTimeoutReply reply = it->second;
  m_timeout_replies.erase(it);
  return reply;
}

void Blocking::forget(Session& s) {
  m_timeout_replies.erase(s.id());
  if (s.has(k_session_blocked)) {
    detach(s);
    s.block = BlockState{};
  }
}

size_t Blocking::blocking_keys() const {
  size_t n = 0;
  for (const KeyMap& keys : m_by_db) {
    n += keys.size();
  }
  return n;
}

size_t Blocking::blocking_keys_on_nokey() const {
  size_t n = 0;
  for (const KeyMap& keys : m_by_db) {
    for (const auto& [key, sessions] : keys) {
      n += std::any_of(sessions.begin(), sessions.end(),
                       [](const Session* s) { return s->block.unblock_on_nokey; })
               ? 1
               : 0;
    }
  }
  return n;
}

}  // namespace keyshift::engine

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct lua_State;

namespace keyshift::engine {

class CmdContext;
class Engine;
class Session;
struct Command;

/// Script flags of a `#!lua flags=...` shebang or a registered function, as Valkey names them.
enum ScriptFlag : uint64_t {
  k_script_no_writes = 1u << 0,
  k_script_allow_oom = 1u << 1,
  k_script_allow_stale = 1u << 2,
  k_script_no_cluster = 1u << 3,
  k_script_eval_compat = 1u << 4,  // an EVAL script without a shebang
  k_script_allow_cross_slot = 1u << 5,
};

/// One function of a library, as FUNCTION LIST shows it.
struct FunctionInfo {
  std::string name;
  std::optional<std::string> description;
  uint64_t flags = 0;
  int ref = 0;  // the callback in the functions Lua state's registry
};

/// A function library: its whole source (shebang included, as FUNCTION DUMP keeps it) and
/// the functions it registered.
struct FunctionLibrary {
  std::string name;
  std::string code;
  std::map<std::string, FunctionInfo> functions;
};

/// The scripting engine of one `Engine`: a Lua 5.1 state for EVAL scripts (their cache by
/// SHA-1) and one for function libraries, both sandboxed as Valkey sandboxes them, with
/// `server.*`/`redis.*` calling back into the engine's command table.
class ScriptEngine {
 public:
  explicit ScriptEngine(Engine& engine);
  ~ScriptEngine();
  ScriptEngine(const ScriptEngine&) = delete;
  ScriptEngine& operator=(const ScriptEngine&) = delete;

  /// EVAL / EVALSHA / EVAL_RO / EVALSHA_RO for `ctx`.
  void eval(CmdContext& ctx, bool by_sha, bool read_only);
  /// FCALL / FCALL_RO for `ctx`.
  void fcall(CmdContext& ctx, bool read_only);
  /// Compiles `body` into the cache (SCRIPT LOAD when `pinned`, else an EVAL); its SHA-1,
  /// or the error reply text.
  bool load_script(std::string_view body, bool pinned, std::string& sha_or_error);
  /// True when a script with this SHA-1 (any case) is cached.
  bool script_exists(std::string_view sha) const;
  /// The body of a cached script, or nullptr.
  const std::string* script_body(std::string_view sha) const;
  /// The declared flags (k_script_*) of the function `name` (any case), or nullopt when
  /// there is no such function.
  std::optional<uint64_t> function_flags(std::string_view name) const;
  /// SCRIPT FLUSH: forgets every script and starts a fresh Lua state.
  void flush_scripts();
  /// Number of cached scripts (INFO number_of_cached_scripts).
  size_t script_count() const { return m_scripts.size(); }
  /// Scripts evicted from the EVAL cache (INFO evicted_scripts).
  uint64_t evicted_scripts() const { return m_evicted_scripts; }
  /// Bytes the EVAL Lua state uses (INFO used_memory_lua).
  uint64_t eval_memory() const;
  /// Bytes the functions Lua state uses (INFO used_memory_vm_functions).
  uint64_t functions_memory() const;
  /// True while a script or function runs.
  bool running() const { return m_run != nullptr; }
  /// What FUNCTION STATS shows of the script that runs: its name, its caller's command, how
  /// long it has run, and whether it is an EVAL script (FUNCTION STATS then answers BUSY).
  struct RunningScript {
    std::string_view name;
    std::vector<std::string_view> command;
    int64_t duration_ms = 0;
    bool eval = false;
  };
  /// The script that runs now, or nullopt.
  std::optional<RunningScript> running_script() const;
  /// True while a script runs past busy-reply-threshold: other clients get BUSY.
  bool busy() const;
  /// The BUSY reply for commands sent while busy (names SCRIPT KILL or FUNCTION KILL).
  std::string_view busy_error() const;
  /// SCRIPT KILL (`eval`) or FUNCTION KILL: empty when the running script will stop, else
  /// the error reply (NOTBUSY, UNKILLABLE, or BUSY naming the other KILL).
  std::string kill(bool eval);
  /// busy-reply-threshold (lua-time-limit) in ms; 0 never times a script out.
  void set_busy_threshold_ms(int64_t ms) { m_busy_threshold_ms = ms; }
  /// Called by the Lua count hook while a script runs.
  void on_hook(lua_State* lua);

  /// FUNCTION LOAD [REPLACE]: the library name, or false with the error text.
  bool load_library(std::string_view code, bool replace, std::string& name_or_error,
                    int64_t timeout_ms = 0);
  /// FUNCTION DELETE: false when there is no such library.
  bool delete_library(std::string_view name);
  /// FUNCTION FLUSH: drops every library.
  void flush_functions();
  /// The libraries, by name.
  const std::map<std::string, FunctionLibrary>& libraries() const { return m_libraries; }
  /// Number of functions over all libraries.
  size_t function_count() const { return m_functions.size(); }

  /// Where server.log lines go (the server's log); without one they are dropped.
  void set_log_sink(std::function<void(int level, std::string_view line)> sink) {
    m_log_sink = std::move(sink);
  }

  /// Lua-facing entry points (called from the C functions the Lua states hold).
  int lua_command(lua_State* lua, bool raise_error);
  int lua_set_resp(lua_State* lua);
  int lua_set_repl(lua_State* lua);
  int lua_log(lua_State* lua);
  int lua_acl_check(lua_State* lua);
  /// The ACL refusal of `cmd` for the script's caller (logged in the lua context), or
  /// nullopt when it may run.
  std::optional<std::string> acl_denial(const Command& cmd, std::span<const std::string_view> argv);
  int lua_register_function(lua_State* lua);

 private:
  struct RunContext;
  struct CachedScript {
    std::string body;
    uint64_t flags = 0;
    bool pinned = false;  // SCRIPT LOAD: never evicted
    uint64_t lru = 0;
  };

  lua_State* new_state(bool functions);
  bool prepare_run(CmdContext& ctx, uint64_t flags, bool read_only, RunContext& run);
  void run_function(CmdContext& ctx, lua_State* lua, RunContext& run, int nkeys, size_t first_key,
                    bool eval_mode);
  void evict_scripts();

  Engine& m_engine;
  lua_State* m_lua = nullptr;
  lua_State* m_functions_lua = nullptr;
  std::unique_ptr<Session> m_session;  // the script client (never listed by CLIENT LIST)
  std::map<std::string, CachedScript, std::less<>> m_scripts;
  uint64_t m_lru_clock = 0;
  size_t m_unpinned = 0;
  uint64_t m_evicted_scripts = 0;
  std::map<std::string, FunctionLibrary> m_libraries;
  /// Function names compare without case, as Valkey's function dictionary does (FCALL TEST
  /// runs test).
  struct NoCaseLess {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const;
  };
  std::map<std::string, std::string, NoCaseLess> m_functions;  // function -> library
  FunctionLibrary* m_loading = nullptr;  // the library FUNCTION LOAD is running
  int64_t m_load_deadline_us = 0;        // when that load times out; 0: never
  RunContext* m_run = nullptr;
  std::function<void(int, std::string_view)> m_log_sink;
  uint64_t m_rand_state = 0;
  int64_t m_busy_threshold_ms = 5000;
};

/// The first line of a function library: `#!<engine> name=<name>`.
struct LibraryMetadata {
  std::string engine;
  std::string name;
  size_t body_offset = 0;  // where the code after that line starts
};

/// Parses a library's first line (Valkey's functionExtractLibMetaData), or false with the
/// error text; the name is not checked for its format here.
bool parse_library_metadata(std::string_view code, LibraryMetadata& out, std::string& error);

/// Parses a `#!lua flags=...` first line of an EVAL script (Valkey's evalExtractShebangFlags):
/// the flags (k_script_eval_compat without a shebang) and the shebang's length, or false
/// with the error text.
bool parse_script_shebang(std::string_view body, uint64_t& flags, size_t& shebang_len,
                          std::string& error);

}  // namespace keyshift::engine

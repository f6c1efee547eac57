// Functions: FUNCTION LOAD/LIST/DELETE/FLUSH/KILL/STATS and FCALL/FCALL_RO over the function
// libraries of engine/scripting/.
#include "engine/commands/context.hpp"
#include "engine/commands/errors.hpp"
#include "engine/commands/families.hpp"
#include "engine/persistence/rdb_reader.hpp"
#include "engine/persistence/rdb_writer.hpp"
#include "engine/scripting/script_engine.hpp"
#include "engine/util/glob.hpp"

namespace keyshift::engine {
namespace {

/// How long FUNCTION LOAD may run a library's top level (Valkey's LOAD_TIMEOUT_MS).
constexpr int64_t k_function_load_timeout_ms = 500;

void cmd_fcall(CmdContext& ctx) {
  ctx.engine().scripting().fcall(ctx, false);
}
void cmd_fcall_ro(CmdContext& ctx) {
  ctx.engine().scripting().fcall(ctx, true);
}

void cmd_function_load(CmdContext& ctx) {
  bool replace = false;
  size_t pos = 2;
  while (pos < ctx.argc() - 1) {
    std::string_view opt = ctx.arg(pos++);
    if (iequals(opt, "replace")) {
      replace = true;
      continue;
    }
    ctx.reply().error("ERR Unknown option given: " + std::string(opt));
    return;
  }
  if (pos >= ctx.argc()) {
    ctx.reply().error("ERR Function code is missing");
    return;
  }
  std::string out;
  // The primary's stream and the engine's own sessions (AOF load) must load what they are
  // given, however long it takes, as Valkey's mustObeyClient.
  bool obey = ctx.session().has(k_session_primary) || ctx.session().has(k_session_in_process);
  if (!ctx.engine().scripting().load_library(ctx.arg(pos), replace, out,
                                             obey ? 0 : k_function_load_timeout_ms)) {
    ctx.reply().error(out);
    return;
  }
  ctx.engine().signal_modified_key(0, "", 1);
  ctx.reply().bulk(out);
}

void cmd_function_delete(CmdContext& ctx) {
  if (!ctx.engine().scripting().delete_library(ctx.arg(2))) {
    ctx.reply().error("ERR Library not found");
    return;
  }
  ctx.reply().ok();
}

void cmd_function_flush(CmdContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  if (ctx.argc() == 3 && !iequals(ctx.arg(2), "ASYNC") && !iequals(ctx.arg(2), "SYNC")) {
    ctx.reply().error(errors::k_function_flush_mode);
    return;
  }
  ctx.engine().scripting().flush_functions();
  ctx.reply().ok();
}

void cmd_function_kill(CmdContext& ctx) {
  std::string error = ctx.engine().scripting().kill(false);
  if (!error.empty()) {
    ctx.reply().error(error);
    return;
  }
  ctx.reply().ok();
}

void cmd_function_stats(CmdContext& ctx) {
  ScriptEngine& s = ctx.engine().scripting();
  ReplyBuilder& r = ctx.reply();
  std::optional<ScriptEngine::RunningScript> running = s.running_script();
  if (running && running->eval) {
    ctx.reply().error(s.busy_error());
    return;
  }
  r.map(2);
  r.bulk("running_script");
  if (running) {
    r.map(3);
    r.bulk("name");
    r.bulk(running->name);
    r.bulk("command");
    r.array(running->command.size());
    for (std::string_view arg : running->command) {
      r.bulk(arg);
    }
    r.bulk("duration_ms");
    r.integer(running->duration_ms);
  } else {
    r.null();
  }
  r.bulk("engines");
  r.map(1);
  r.bulk("LUA");
  r.map(2);
  r.bulk("libraries_count");
  r.integer(static_cast<int64_t>(s.libraries().size()));
  r.bulk("functions_count");
  r.integer(static_cast<int64_t>(s.function_count()));
}

struct FlagText {
  uint64_t flag;
  std::string_view name;
};
constexpr FlagText k_flag_texts[] = {
    {k_script_no_writes, "no-writes"},
    {k_script_allow_oom, "allow-oom"},
    {k_script_allow_stale, "allow-stale"},
    {k_script_no_cluster, "no-cluster"},
    {k_script_allow_cross_slot, "allow-cross-slot-keys"},
};

void cmd_function_list(CmdContext& ctx) {
  bool with_code = false;
  std::optional<std::string_view> pattern;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (!with_code && iequals(ctx.arg(i), "withcode")) {
      with_code = true;
      continue;
    }
    if (!pattern && iequals(ctx.arg(i), "libraryname")) {
      if (i >= ctx.argc() - 1) {
        ctx.reply().error("ERR library name argument was not given");
        return;
      }
      pattern = ctx.arg(++i);
      continue;
    }
    ctx.reply().error("ERR Unknown argument " + std::string(ctx.arg(i)));
    return;
  }
  ReplyBuilder& r = ctx.reply();
  size_t mark = r.begin_array();
  size_t n = 0;
  for (const auto& [name, lib] : ctx.engine().scripting().libraries()) {
    if (pattern && !glob_match(*pattern, name, GlobCase::insensitive)) {
      continue;
    }
    ++n;
    r.map(with_code ? 4 : 3);
    r.bulk("library_name");
    r.bulk(name);
    r.bulk("engine");
    r.bulk("LUA");
    r.bulk("functions");
    r.array(lib.functions.size());
    for (const auto& [fname, fi] : lib.functions) {
      r.map(3);
      r.bulk("name");
      r.bulk(fname);
      r.bulk("description");
      if (fi.description) {
        r.bulk(*fi.description);
      } else {
        r.null();
      }
      r.bulk("flags");
      size_t count = 0;
      for (const FlagText& f : k_flag_texts) {
        count += (fi.flags & f.flag) != 0 ? 1 : 0;
      }
      r.set(count);
      for (const FlagText& f : k_flag_texts) {
        if ((fi.flags & f.flag) != 0) {
          r.simple(f.name);
        }
      }
    }
    if (with_code) {
      r.bulk("library_code");
      r.bulk(lib.code);
    }
  }
  r.end_array(mark, n);
}

void cmd_function_dump(CmdContext& ctx) {
  std::vector<std::string> codes;
  for (const auto& [name, lib] : ctx.engine().scripting().libraries()) {
    codes.push_back(lib.code);
  }
  ctx.reply().bulk(functions_dump_payload(codes, ctx.engine().config().rdbcompression));
}

// Collects the FUNCTION2 records of a FUNCTION RESTORE payload.
class FunctionRecords : public RdbVisitor {
 public:
  void on_function(std::string_view code) override { codes.emplace_back(code); }
  bool on_key(RdbKey& key) override {
    (void)key;
    has_key = true;
    return false;
  }
  std::vector<std::string> codes;
  bool has_key = false;
};

void cmd_function_restore(CmdContext& ctx) {
  enum class Policy { append, replace, flush } policy = Policy::append;
  if (ctx.argc() > 4) {
    ctx.reply().error(subcommand_syntax_error(ctx));
    return;
  }
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "flush")) {
      policy = Policy::flush;
    } else if (iequals(ctx.arg(3), "replace")) {
      policy = Policy::replace;
    } else if (iequals(ctx.arg(3), "append")) {
      policy = Policy::append;
    } else {
      ctx.reply().error(
          "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
      return;
    }
  }
  std::string_view payload = ctx.arg(2);
  auto checked = check_dump_payload(payload);
  if (!checked) {
    ctx.reply().error("ERR DUMP payload version or checksum are wrong");
    return;
  }
  // The records read as an RDB file would: a header, the records, EOF and no checksum.
  std::string file = "REDIS0011";
  file.append(payload.substr(0, payload.size() - 10));
  file.push_back(static_cast<char>(0xFF));
  file.append(8, '\0');
  FunctionRecords records;
  RdbReadOptions read;
  read.verify_checksum = false;
  auto summary = read_rdb(file, records, read);
  if (!summary || records.has_key) {
    ctx.reply().error(records.has_key ? "ERR given type is not a function"
                                      : "ERR can not read data type");
    return;
  }
  ScriptEngine& scripts = ctx.engine().scripting();
  std::vector<std::string> before;
  for (const auto& [name, lib] : scripts.libraries()) {
    before.push_back(lib.code);
  }
  if (policy == Policy::append) {
    // Valkey joins the payload's libraries only when none of them exists yet, and names the
    // first that does without the quotes FUNCTION LOAD puts around it.
    for (const std::string& code : records.codes) {
      LibraryMetadata meta;
      std::string error;
      if (parse_library_metadata(code, meta, error) && scripts.libraries().count(meta.name) != 0) {
        ctx.reply().error(std::string(errors::k_restore_library_exists_prefix) + meta.name +
                          std::string(errors::k_restore_library_exists_suffix));
        return;
      }
    }
  }
  if (policy == Policy::flush) {
    scripts.flush_functions();
  }
  for (const std::string& code : records.codes) {
    std::string error;
    if (!scripts.load_library(code, policy == Policy::replace, error)) {
      // All or nothing: the libraries from before the command come back.
      scripts.flush_functions();
      for (const std::string& old : before) {
        std::string ignored;
        scripts.load_library(old, true, ignored);
      }
      ctx.reply().error(error);
      return;
    }
  }
  ctx.reply().ok();
}

void cmd_function_help(CmdContext& ctx) {
  reply_help(ctx, {
                      "LOAD [REPLACE] <FUNCTION CODE>",
                      "    Create a new library with the given library name and code.",
                      "DELETE <LIBRARY NAME>",
                      "    Delete the given library.",
                      "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                      "    Return general information on all the libraries:",
                      "    * Library name",
                      "    * The engine used to run the Library",
                      "    * Library description",
                      "    * Functions list",
                      "    * Library code (if WITHCODE is given)",
                      "    It also possible to get only function that matches a pattern using "
                      "LIBRARYNAME argument.",
                      "STATS",
                      "    Return information about the current function running:",
                      "    * Function name",
                      "    * Command used to run the function",
                      "    * Duration in MS that the function is running",
                      "    If no function is running, return nil",
                      "    In addition, returns a list of available engines.",
                      "KILL",
                      "    Kill the current running function.",
                      "FLUSH [ASYNC|SYNC]",
                      "    Delete all the libraries.",
                      "    When called without the optional mode argument, the behavior is "
                      "determined by the",
                      "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                      "    * ASYNC: Asynchronously flush the libraries.",
                      "    * SYNC: Synchronously flush the libraries.",
                      "DUMP",
                      "    Return a serialized payload representing the current libraries, can "
                      "be restored using FUNCTION RESTORE command",
                      "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
                      "    Restore the libraries represented by the given payload, it is "
                      "possible to give a restore policy to",
                      "    control how to handle existing libraries (default APPEND):",
                      "    * FLUSH: delete all existing libraries.",
                      "    * APPEND: appends the restored libraries to the existing libraries. "
                      "On collision, abort.",
                      "    * REPLACE: appends the restored libraries to the existing libraries, "
                      "On collision, replace the old",
                      "      libraries with the new libraries (notice that even on this option "
                      "there is a chance of failure",
                      "      in case of functions name collision with another library).",
                  });
}

constexpr uint32_t k_fcall_flags = k_cmd_noscript | k_cmd_skip_monitor | k_cmd_may_replicate |
                                   k_cmd_no_mandatory_keys | k_cmd_stale | k_cmd_movablekeys;

constexpr CommandSpec k_function_commands[] = {
    {"fcall", -3, k_fcall_flags, 0, 0, 0, cmd_fcall, "@slow @scripting"},
    {"fcall_ro", -3,
     k_cmd_noscript | k_cmd_skip_monitor | k_cmd_no_mandatory_keys | k_cmd_stale | k_cmd_readonly |
         k_cmd_movablekeys,
     0, 0, 0, cmd_fcall_ro, "@slow @scripting"},
    {"function", -2, 0, 0, 0, 0, nullptr, "@slow"},
    {"function|delete", 3, k_cmd_write | k_cmd_noscript, 0, 0, 0, cmd_function_delete,
     "@write @slow @scripting"},
    {"function|dump", 2, k_cmd_noscript, 0, 0, 0, cmd_function_dump, "@slow @scripting"},
    {"function|flush", -2, k_cmd_write | k_cmd_noscript, 0, 0, 0, cmd_function_flush,
     "@write @slow @scripting"},
    {"function|help", 2, k_cmd_loading | k_cmd_stale, 0, 0, 0, cmd_function_help,
     "@slow @scripting"},
    {"function|kill", 2, k_cmd_noscript | k_cmd_allow_busy, 0, 0, 0, cmd_function_kill,
     "@slow @scripting"},
    {"function|list", -2, k_cmd_noscript, 0, 0, 0, cmd_function_list, "@slow @scripting"},
    {"function|load", -3, k_cmd_write | k_cmd_denyoom | k_cmd_noscript, 0, 0, 0, cmd_function_load,
     "@write @slow @scripting"},
    {"function|restore", -3, k_cmd_write | k_cmd_denyoom | k_cmd_noscript, 0, 0, 0,
     cmd_function_restore, "@write @slow @scripting"},
    {"function|stats", 2, k_cmd_noscript | k_cmd_allow_busy, 0, 0, 0, cmd_function_stats,
     "@slow @scripting"},
};

}  // namespace

void register_function_family(CommandRegistry& registry) {
  registry.add(k_function_commands);
}

}  // namespace keyshift::engine

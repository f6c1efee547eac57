#pragma once

// Reading append-only files as Valkey 8 and Redis 7 write them, for `keyshift serve` (load at
// start) and `keyshift import` (an AOF as a source). Two layouts exist:
//  - a single file (Redis < 7, or `appendfilename` outside a directory): RESP commands,
//    optionally after an RDB preamble ("REDIS..." up to its EOF opcode and checksum);
//  - a multi-part directory (Redis 7+, Valkey): a manifest `<appendfilename>.manifest` whose
//    lines are `file <name> seq <n> type <b|h|i>`; the base (`b`: an RDB file, or RESP) is
//    read first, then the incr files (`i`) in manifest order; history files (`h`) are
//    superseded and skipped.
//
// Usage (import):
//   struct Sink : AofVisitor {
//     RdbVisitor* rdb_visitor() override { return &my_rdb_visitor; }   // keys of a base RDB
//     bool on_command(const AofCommand& c) override { ...c.argv...; return true; }
//   } sink;
//   auto summary = read_aof("/var/lib/redis/appendonlydir", sink);   // or a single file
//   if (!summary) { error: summary.error().file, .offset, .message }
//   if (summary->truncated) { the last file ends in a partial command at truncated_at }
//
// Commands between MULTI and EXEC are held back until EXEC is read, then delivered with
// MULTI and EXEC around them, so a transaction cut off by the end of the last file is never
// half delivered (Valkey's "Revert incomplete MULTI/EXEC transaction").

#include "engine/persistence/rdb_reader.hpp"
#include "engine/util/expected.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// Why an AOF could not be read: the file (a path), the byte offset in it, and what was
/// wrong there. Manifest errors carry the line number in `line` (offset is then 0).
struct AofError {
  std::string file;
  uint64_t offset = 0;
  int line = 0;
  std::string message;
  /// "file: byte N: message" (or "file: line N: message"), as errors are shown to people.
  std::string describe() const;
};

/// The kind of a file named by a manifest.
enum class AofFileType : char { base = 'b', history = 'h', incr = 'i' };

/// One manifest line.
struct AofManifestEntry {
  std::string name;  // a base name inside the AOF directory
  int64_t seq = 0;
  AofFileType type = AofFileType::incr;
};

/// A parsed manifest: the base (if any), history files and incr files in manifest order.
struct AofManifest {
  std::vector<AofManifestEntry> entries;  // as written: base, history, incr
  /// The base entry, or nullptr.
  const AofManifestEntry* base() const;
  /// The incr entries in order.
  std::vector<const AofManifestEntry*> incrs() const;
};

/// Parses a manifest's text as Valkey's aofLoadManifestFromFile does (comments, quoted
/// names, forward-compatible extra key/value pairs, one base, increasing incr sequence
/// numbers); `name` is used in errors.
Expected<AofManifest, AofError> parse_aof_manifest(std::string_view text, std::string_view name);

/// The manifest text Valkey writes for `manifest` (base, then history, then incr lines).
std::string format_aof_manifest(const AofManifest& manifest);

/// A file as the reader starts it.
struct AofFileInfo {
  std::string path;  // full path, as given or inside the directory
  std::string name;  // base name (the manifest's name in a directory)
  AofFileType type = AofFileType::base;
  bool last = false;  // the last file read: the only one whose tail may be truncated
  uint64_t size = 0;
};

/// One command as read: its arguments (views into the mapped file, valid during the call),
/// the file and the byte offset of its `*` line.
struct AofCommand {
  std::span<const std::string_view> argv;
  const AofFileInfo* file = nullptr;
  uint64_t offset = 0;
};

/// Receives what read_aof finds, in order.
class AofVisitor {
 public:
  virtual ~AofVisitor() = default;
  /// A file is about to be read.
  virtual void on_file(const AofFileInfo& file);
  /// `bytes` (the whole file) start with an RDB preamble ("REDIS"): read it and return where
  /// it ends (RdbSummary::end_offset); RESP commands may follow in a single-file AOF. The
  /// default reads it with read_rdb() and rdb_visitor() (or skips the keys without one).
  virtual Expected<uint64_t, RdbError> on_rdb_preamble(std::string_view bytes,
                                                       const AofFileInfo& file);
  /// Where the default on_rdb_preamble sends the keys; nullptr skips them.
  virtual RdbVisitor* rdb_visitor();
  /// A command. Return false to stop reading (not an error).
  virtual bool on_command(const AofCommand& command) = 0;
};

/// How to read.
struct AofReadOptions {
  /// The single file's name or the name the manifest is found by (`appendfilename`).
  std::string appendfilename = "appendonly.aof";
  /// A partial command at the end of the last file is reported (AofSummary::truncated) and
  /// not an error (aof-load-truncated yes); false makes it an error.
  bool allow_truncated = true;
};

/// What read_aof saw.
struct AofSummary {
  std::vector<AofFileInfo> files;  // in the order read
  uint64_t commands = 0;           // commands delivered (MULTI and EXEC included)
  bool rdb_base = false;           // the first file had an RDB preamble
  bool truncated = false;
  std::string truncated_file;  // path of the file with the partial tail
  uint64_t truncated_at = 0;   // bytes of that file that hold whole commands (Valkey's
                               // valid_up_to: what truncate() should keep)
  bool stopped = false;        // the visitor asked to stop
};

/// True when `path` names an append-only file or a RESP command file rather than an RDB or
/// JSON Lines file: a directory (multi-part AOF), a manifest, a file named *.aof (an RDB
/// preamble starts like an RDB file, so the name decides), or a file starting with '*'.
bool looks_like_aof(const std::string& path);

/// Reads the AOF at `path`: a directory holding `<appendfilename>.manifest`, a manifest file
/// itself, or one single-file AOF. Errors name the file and byte offset: a byte that is not
/// where RESP puts it, a length that runs past the file, a file the manifest names but that
/// is missing, a partial command anywhere but at the end of the last file (or there too
/// without allow_truncated).
Expected<AofSummary, AofError> read_aof(const std::string& path, AofVisitor& visitor,
                                        const AofReadOptions& options = {});

/// Reads the AOF `bytes` of the one file `file` describes (tests, and callers that hold the
/// bytes already), as read_aof reads each file.
Expected<AofSummary, AofError> read_aof_bytes(std::string_view bytes, const AofFileInfo& file,
                                              AofVisitor& visitor,
                                              const AofReadOptions& options = {});

}  // namespace keyshift::engine

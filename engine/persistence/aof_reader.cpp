#include "engine/persistence/aof_reader.hpp"

#include "engine/util/mapped_file.hpp"
#include "engine/util/split_args.hpp"
#include "engine/util/strings.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

namespace keyshift::engine {
namespace {

// Valkey reads manifest lines into a buffer this long (MANIFEST_MAX_LINE).
constexpr size_t k_manifest_max_line = 1024;
// A count or length line longer than this is not RESP anyone wrote.
constexpr size_t k_max_header_line = 64;

class SkipKeys final : public RdbVisitor {
 public:
  bool on_key(RdbKey&) override { return true; }
};

bool is_base_name(std::string_view name) {
  return !name.empty() && name.find('/') == name.npos && name != "." && name != "..";
}

// One file's RESP commands from `pos` on, as loadSingleAppendOnlyFile reads them.
class RespFileReader {
 public:
  RespFileReader(std::string_view bytes, const AofFileInfo& file, AofVisitor& visitor,
                 const AofReadOptions& options, AofSummary& summary)
      : m_bytes(bytes), m_file(file), m_visitor(visitor), m_options(options), m_summary(summary) {}

  std::optional<AofError> run(size_t pos) {
    m_pos = pos;
    m_valid_up_to = pos;
    while (m_pos < m_bytes.size()) {
      char lead = m_bytes[m_pos];
      if (lead == '#') {
        // An annotation (aof-timestamp-enabled writes "#TS:<unix seconds>").
        size_t nl = m_bytes.find('\n', m_pos);
        m_pos = nl == m_bytes.npos ? m_bytes.size() : nl + 1;
        m_valid_up_to = m_in_multi ? m_valid_up_to : m_pos;
        continue;
      }
      if (lead != '*') {
        return error_at(m_pos, fmt::format("bad file format: expected '*' (a command), found {}",
                                           describe_byte(lead)));
      }
      uint64_t at = m_pos;
      std::optional<AofError> err;
      bool whole = read_command(err);
      if (err) {
        return err;
      }
      if (!whole) {
        return truncated(at);
      }
      if (!deliver(at)) {
        m_summary.stopped = true;
        return std::nullopt;
      }
      if (m_summary.stopped) {
        return std::nullopt;
      }
    }
    if (m_in_multi) {
      // Protocol complete, transaction not: treated as a short read (Valkey's "Revert
      // incomplete MULTI/EXEC transaction").
      return truncated(m_multi_at);
    }
    return std::nullopt;
  }

 private:
  struct Held {
    uint64_t offset = 0;
    std::vector<std::string_view> argv;
  };

  static std::string describe_byte(char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", u);
  }

  AofError error_at(uint64_t offset, std::string message) const {
    return AofError{m_file.path, offset, 0, std::move(message)};
  }

  // A partial command starting at `at`: the truncated tail, or an error where that is not
  // allowed.
  std::optional<AofError> truncated(uint64_t at) {
    uint64_t keep = m_in_multi ? m_multi_valid_before : m_valid_up_to;
    if (!m_file.last) {
      return error_at(at,
                      "unexpected end of file in a command; only the last file of an AOF may "
                      "end in a partial command");
    }
    if (!m_options.allow_truncated) {
      return error_at(at, fmt::format("unexpected end of file in a command (the file holds whole "
                                      "commands up to byte {}; aof-load-truncated is off)",
                                      keep));
    }
    m_summary.truncated = true;
    m_summary.truncated_file = m_file.path;
    m_summary.truncated_at = keep;
    return std::nullopt;
  }

  // Reads "<lead><digits>\r\n" at m_pos into `value`. nullopt: the file ended first.
  std::optional<bool> header(char lead, int64_t& value, std::optional<AofError>& err) {
    size_t nl = m_bytes.find('\n', m_pos);
    if (nl == m_bytes.npos) {
      if (m_bytes.size() - m_pos > k_max_header_line) {
        err = error_at(m_pos, "bad file format: line too long");
        return false;
      }
      return std::nullopt;
    }
    if (m_bytes[m_pos] != lead) {
      err = error_at(m_pos, fmt::format("bad file format: expected '{}', found {}", lead,
                                        describe_byte(m_bytes[m_pos])));
      return false;
    }
    std::string_view digits = m_bytes.substr(m_pos + 1, nl - m_pos - 1);
    if (digits.empty() || digits.back() != '\r') {
      err = error_at(nl, "bad file format: a line does not end in CRLF");
      return false;
    }
    digits.remove_suffix(1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) {
      err = error_at(m_pos + 1, fmt::format("bad file format: invalid {} '{}'",
                                            lead == '*' ? "argument count" : "length",
                                            std::string(digits.substr(0, 32))));
      return false;
    }
    m_pos = nl + 1;
    return true;
  }

  // One command into m_argv; false when the file ends inside it.
  bool read_command(std::optional<AofError>& err) {
    int64_t argc = 0;
    uint64_t start = m_pos;
    auto got = header('*', argc, err);
    if (!got || !*got) {
      return !got ? false : true;
    }
    if (argc < 1) {
      err = error_at(start, "bad file format: a command with no arguments");
      return true;
    }
    m_argv.clear();
    for (int64_t j = 0; j < argc; ++j) {
      if (m_pos >= m_bytes.size()) {
        return false;
      }
      int64_t len = 0;
      got = header('$', len, err);
      if (!got || !*got) {
        return !got ? false : true;
      }
      uint64_t left = m_bytes.size() - m_pos;
      if (static_cast<uint64_t>(len) > left || left - static_cast<uint64_t>(len) < 2) {
        return false;
      }
      m_argv.push_back(m_bytes.substr(m_pos, static_cast<size_t>(len)));
      m_pos += static_cast<size_t>(len);
      if (m_bytes[m_pos] != '\r' || m_bytes[m_pos + 1] != '\n') {
        err = error_at(m_pos, "bad file format: an argument is not followed by CRLF");
        return true;
      }
      m_pos += 2;
    }
    return true;
  }

  bool emit(uint64_t offset, std::span<const std::string_view> argv) {
    ++m_summary.commands;
    return m_visitor.on_command(AofCommand{argv, &m_file, offset});
  }

  bool deliver(uint64_t at) {
    bool multi = iequals(m_argv[0], "multi");
    bool exec = iequals(m_argv[0], "exec");
    if (m_in_multi && !exec) {
      m_held.push_back(Held{at, m_argv});
      return true;
    }
    if (multi) {
      m_in_multi = true;
      m_multi_at = at;
      m_multi_valid_before = m_valid_up_to;
      m_held.clear();
      return true;
    }
    if (m_in_multi) {
      m_in_multi = false;
      std::string_view multi_argv[] = {"MULTI"};
      if (!emit(m_multi_at, multi_argv)) {
        return false;
      }
      for (const Held& h : m_held) {
        if (!emit(h.offset, h.argv)) {
          return false;
        }
      }
      m_held.clear();
    }
    m_valid_up_to = m_pos;
    return emit(at, m_argv);
  }

  std::string_view m_bytes;
  const AofFileInfo& m_file;
  AofVisitor& m_visitor;
  const AofReadOptions& m_options;
  AofSummary& m_summary;
  size_t m_pos = 0;
  uint64_t m_valid_up_to = 0;
  std::vector<std::string_view> m_argv;
  bool m_in_multi = false;
  uint64_t m_multi_at = 0;
  uint64_t m_multi_valid_before = 0;
  std::vector<Held> m_held;
};

bool has_rdb_preamble(std::string_view bytes) {
  return bytes.starts_with("REDIS") || bytes.starts_with("VALKEY");
}

std::optional<AofError> read_one(std::string_view bytes, const AofFileInfo& file,
                                 AofVisitor& visitor, const AofReadOptions& options,
                                 AofSummary& summary) {
  visitor.on_file(file);
  size_t start = 0;
  if (has_rdb_preamble(bytes)) {
    if (summary.files.size() == 1) {
      summary.rdb_base = true;
    }
    auto end = visitor.on_rdb_preamble(bytes, file);
    if (!end) {
      return AofError{file.path, end.error().offset, 0,
                      "in the RDB preamble: " + end.error().message};
    }
    start = static_cast<size_t>(*end);
  }
  return RespFileReader(bytes, file, visitor, options, summary).run(start);
}

}  // namespace

std::string AofError::describe() const {
  if (line > 0) {
    return fmt::format("{}: line {}: {}", file, line, message);
  }
  return fmt::format("{}: byte {}: {}", file, offset, message);
}

const AofManifestEntry* AofManifest::base() const {
  for (const AofManifestEntry& e : entries) {
    if (e.type == AofFileType::base) {
      return &e;
    }
  }
  return nullptr;
}

std::vector<const AofManifestEntry*> AofManifest::incrs() const {
  std::vector<const AofManifestEntry*> out;
  for (const AofManifestEntry& e : entries) {
    if (e.type == AofFileType::incr) {
      out.push_back(&e);
    }
  }
  return out;
}

Expected<AofManifest, AofError> parse_aof_manifest(std::string_view text, std::string_view name) {
  AofManifest manifest;
  int line_no = 0;
  int64_t max_seq = 0;
  bool have_base = false;
  auto fail = [&](std::string message) {
    return Unexpected{AofError{std::string(name), 0, line_no, std::move(message)}};
  };
  if (text.empty()) {
    return fail("found an empty AOF manifest");
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    ++line_no;
    std::string_view line =
        text.substr(pos, nl == text.npos ? text.npos : nl - pos + 1);  // with its newline
    pos = nl == text.npos ? text.size() : nl + 1;
    if (line.starts_with('#')) {
      continue;
    }
    if (line.size() > k_manifest_max_line || nl == text.npos) {
      return fail(
          "the AOF manifest file contains too long line (or a last line without a "
          "newline)");
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ' ||
                             line.back() == '\t')) {
      line.remove_suffix(1);
    }
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      line.remove_prefix(1);
    }
    std::vector<std::string> argv;
    if (line.empty() || !split_args(line, argv) || argv.size() < 6 || argv.size() % 2 != 0) {
      return fail("invalid AOF manifest file format");
    }
    AofManifestEntry entry;
    char type = 0;
    for (size_t i = 0; i < argv.size(); i += 2) {
      if (iequals(argv[i], "file")) {
        if (!is_base_name(argv[i + 1])) {
          return fail("file can't be a path, just a filename");
        }
        entry.name = argv[i + 1];
      } else if (iequals(argv[i], "seq")) {
        // atoll, as Valkey: digits after optional blanks and sign, the rest ignored.
        entry.seq = std::atoll(argv[i + 1].c_str());
      } else if (iequals(argv[i], "type")) {
        type = argv[i + 1].empty() ? '\0' : argv[i + 1][0];
      }
    }
    if (entry.name.empty() || entry.seq == 0 || type == 0) {
      return fail("invalid AOF manifest file format");
    }
    if (type == 'b') {
      if (have_base) {
        return fail("found duplicate base file information");
      }
      have_base = true;
      entry.type = AofFileType::base;
    } else if (type == 'h') {
      entry.type = AofFileType::history;
    } else if (type == 'i') {
      if (entry.seq <= max_seq) {
        return fail("found a non-monotonic sequence number");
      }
      max_seq = entry.seq;
      entry.type = AofFileType::incr;
    } else {
      return fail("unknown AOF file type");
    }
    manifest.entries.push_back(std::move(entry));
  }
  if (line_no == 0) {
    return fail("found an empty AOF manifest");
  }
  return manifest;
}

std::string format_aof_manifest(const AofManifest& manifest) {
  std::string out;
  auto line = [&](const AofManifestEntry& e) {
    bool plain = true;
    for (unsigned char c : e.name) {
      if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\') {
        plain = false;
      }
    }
    out += fmt::format("file {} seq {} type {}\n", plain ? e.name : quote_repr(e.name), e.seq,
                       static_cast<char>(e.type));
  };
  for (AofFileType t : {AofFileType::base, AofFileType::history, AofFileType::incr}) {
    for (const AofManifestEntry& e : manifest.entries) {
      if (e.type == t) {
        line(e);
      }
    }
  }
  return out;
}

void AofVisitor::on_file(const AofFileInfo&) {}

RdbVisitor* AofVisitor::rdb_visitor() {
  return nullptr;
}

Expected<uint64_t, RdbError> AofVisitor::on_rdb_preamble(std::string_view bytes,
                                                         const AofFileInfo&) {
  SkipKeys skip;
  RdbVisitor* target = rdb_visitor();
  RdbReadOptions options;
  options.materialize = target != nullptr;
  auto summary = read_rdb(bytes, target != nullptr ? *target : skip, options);
  if (!summary) {
    return Unexpected{summary.error()};
  }
  return summary->end_offset;
}

Expected<AofSummary, AofError> read_aof_bytes(std::string_view bytes, const AofFileInfo& file,
                                              AofVisitor& visitor, const AofReadOptions& options) {
  AofSummary summary;
  summary.files.push_back(file);
  if (auto err = read_one(bytes, summary.files.back(), visitor, options, summary)) {
    return Unexpected{std::move(*err)};
  }
  return summary;
}

Expected<AofSummary, AofError> read_aof(const std::string& path, AofVisitor& visitor,
                                        const AofReadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(path);
  fs::path dir;
  fs::path manifest_path;
  if (fs::is_directory(p, ec)) {
    dir = p;
    manifest_path = dir / (options.appendfilename + ".manifest");
    if (!fs::exists(manifest_path, ec)) {
      // Whatever appendfilename the writer used: the directory's only manifest.
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::string name = entry.path().filename().string();
        if (name.ends_with(".manifest") && !name.starts_with("temp-")) {
          found.push_back(entry.path());
        }
      }
      if (found.size() != 1) {
        return Unexpected{AofError{
            path, 0, 0,
            found.empty() ? "no AOF manifest (*.manifest) in this directory"
                          : "more than one AOF manifest in this directory; name the one to read"}};
      }
      manifest_path = found.front();
    }
  } else if (p.extension() == ".manifest") {
    manifest_path = p;
    dir = p.parent_path();
  }
  AofSummary summary;
  std::vector<AofFileInfo> plan;
  if (manifest_path.empty()) {
    AofFileInfo only;
    only.path = path;
    only.name = p.filename().string();
    only.type = AofFileType::base;
    plan.push_back(only);
  } else {
    auto text = MappedFile::open(manifest_path.string());
    if (!text) {
      return Unexpected{AofError{manifest_path.string(), 0, 0, text.error().message()}};
    }
    auto manifest = parse_aof_manifest(text->data(), manifest_path.string());
    if (!manifest) {
      return Unexpected{manifest.error()};
    }
    auto add = [&](const AofManifestEntry& e) {
      AofFileInfo info;
      info.path = (dir / e.name).string();
      info.name = e.name;
      info.type = e.type;
      plan.push_back(std::move(info));
    };
    if (const AofManifestEntry* base = manifest->base()) {
      add(*base);
    }
    for (const AofManifestEntry* incr : manifest->incrs()) {
      add(*incr);
    }
    if (plan.empty()) {
      return Unexpected{
          AofError{manifest_path.string(), 0, 0, "the manifest names no base and no incr file"}};
    }
  }
  plan.back().last = true;
  for (AofFileInfo& info : plan) {
    struct stat st {};
    if (::stat(info.path.c_str(), &st) != 0) {
      return Unexpected{AofError{
          info.path, 0, 0,
          fmt::format("cannot read the AOF file{}: {}",
                      manifest_path.empty() ? "" : " the manifest names", std::strerror(errno))}};
    }
    info.size = static_cast<uint64_t>(st.st_size);
  }
  summary.files.reserve(plan.size());
  for (AofFileInfo& info : plan) {
    auto file = MappedFile::open(info.path);
    if (!file) {
      return Unexpected{AofError{info.path, 0, 0, file.error().message()}};
    }
    summary.files.push_back(info);
    if (auto err = read_one(file->data(), summary.files.back(), visitor, options, summary)) {
      return Unexpected{std::move(*err)};
    }
    if (summary.stopped) {
      break;
    }
  }
  return summary;
}

bool looks_like_aof(const std::string& path) {
  std::error_code ec;
  std::string name = std::filesystem::path(path).filename().string();
  if (std::filesystem::is_directory(path, ec) || name.ends_with(".manifest") ||
      name.ends_with(".aof") || name.find(".aof.") != std::string::npos) {
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  return in.is_open() && in.get(first) && first == '*';
}

}  // namespace keyshift::engine

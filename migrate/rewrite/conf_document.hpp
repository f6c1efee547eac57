#pragma once

#include "engine/util/expected.hpp"

#include <string>
#include <string_view>
#include <vector>

// A redis.conf/valkey.conf file as lines, so a rewrite changes only the lines it means to and
// every comment, blank line and spacing of the rest comes out byte for byte.
namespace keyshift::migrate {

/// One line of a config file.
struct ConfLine {
  std::string text;               ///< the line without its terminator
  std::string eol;                ///< "\n", "\r\n", or "" for a last line without one
  bool directive = false;         ///< false for blank and comment lines
  std::string name;               ///< lower-cased directive name
  std::vector<std::string> args;  ///< unquoted arguments, as the server reads them
  int number = 0;                 ///< 1-based line number in the file as read
};

/// Where and why a file cannot be read as a config file.
struct ConfError {
  std::string file;
  int line = 0;  ///< 0 when no line is involved
  std::string message;
};

/// A whole config file.
struct ConfDocument {
  std::string path;
  std::vector<ConfLine> lines;

  /// The file's text: every line and its terminator, in order.
  std::string render() const;
};

/// Reads `text` with the server's rules (engine::split_args quoting, '#' comments only at the
/// start of a line, names case-insensitive); fails on unbalanced quotes, naming the line.
engine::Expected<ConfDocument, ConfError> parse_conf_document(std::string_view text,
                                                              std::string path);

/// A line holding `name` and `args`, quoting only the words that need it.
std::string format_directive(std::string_view name, const std::vector<std::string>& args);

/// `line` with argument `index` set to `value`: replaced where it is written when it was
/// written bare, so the spacing stays; otherwise the line is rebuilt from its words.
std::string replace_directive_arg(const ConfLine& line, size_t index, std::string_view value);

}  // namespace keyshift::migrate

#include "migrate/rewrite/conf_document.hpp"

#include "engine/util/split_args.hpp"
#include "engine/util/strings.hpp"

namespace keyshift::migrate {

std::string ConfDocument::render() const {
  std::string out;
  for (const ConfLine& line : lines) {
    out += line.text;
    out += line.eol;
  }
  return out;
}

engine::Expected<ConfDocument, ConfError> parse_conf_document(std::string_view text,
                                                              std::string path) {
  ConfDocument doc;
  doc.path = std::move(path);
  size_t start = 0;
  int number = 0;
  std::vector<std::string> words;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    ConfLine line;
    line.number = ++number;
    if (end == std::string_view::npos) {
      line.text = std::string(text.substr(start));
      start = text.size();
    } else {
      line.text = std::string(text.substr(start, end - start));
      line.eol = "\n";
      start = end + 1;
    }
    if (!line.text.empty() && line.text.back() == '\r') {
      line.text.pop_back();
      line.eol = "\r" + line.eol;
    }
    constexpr std::string_view k_blank = " \t\r\n";
    std::string_view view = line.text;
    size_t first = view.find_first_not_of(k_blank);
    if (first != std::string_view::npos && view[first] != '#') {
      view = view.substr(first, view.find_last_not_of(k_blank) - first + 1);
      if (!engine::split_args(view, words)) {
        return engine::Unexpected{
            ConfError{doc.path, line.number, "Unbalanced quotes in configuration line"}};
      }
      if (!words.empty()) {
        line.directive = true;
        line.name = engine::to_lower(words[0]);
        line.args.assign(words.begin() + 1, words.end());
      }
    }
    doc.lines.push_back(std::move(line));
  }
  return doc;
}

std::string format_directive(std::string_view name, const std::vector<std::string>& args) {
  std::string out(name);
  for (const std::string& arg : args) {
    out += ' ';
    out += engine::quote_arg(arg);
  }
  return out;
}

std::string replace_directive_arg(const ConfLine& line, size_t index, std::string_view value) {
  std::vector<std::string> args = line.args;
  if (index >= args.size()) {
    return line.text;
  }
  const std::string& old = args[index];
  if (engine::quote_arg(old) == old && engine::quote_arg(value) == value) {
    // Find the index-th bare word after the name so "dir  /var/lib/redis" keeps its spacing.
    std::string_view text = line.text;
    size_t pos = text.find_first_not_of(" \t");
    pos = text.find_first_of(" \t", pos);  // end of the name
    for (size_t i = 0; pos != std::string_view::npos && i <= index; ++i) {
      size_t word_start = text.find_first_not_of(" \t", pos);
      if (word_start == std::string_view::npos) {
        break;
      }
      size_t word_end = text.find_first_of(" \t", word_start);
      if (word_end == std::string_view::npos) {
        word_end = text.size();
      }
      if (i == index) {
        if (text.substr(word_start, word_end - word_start) == old) {
          std::string out(text.substr(0, word_start));
          out += value;
          out += text.substr(word_end);
          return out;
        }
        break;
      }
      pos = word_end;
    }
  }
  args[index] = std::string(value);
  size_t indent = line.text.find_first_not_of(" \t");
  std::string name = line.text.substr(indent, line.text.find_first_of(" \t", indent) - indent);
  return line.text.substr(0, indent) + format_directive(name, args);
}

}  // namespace keyshift::migrate

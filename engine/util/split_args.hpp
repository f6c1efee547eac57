#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace keyshift::engine {

/// Splits a line into words the way valkey-server does for inline commands and config
/// files: blanks separate words, "double quotes" take \n \r \t \b \a \\ \" and \xHH
/// escapes, 'single quotes' take only \'. Returns false on unbalanced quotes or a closing
/// quote not followed by a blank.
bool split_args(std::string_view line, std::vector<std::string>& out);

/// `bytes` double-quoted as Valkey's sdscatrepr() writes them (redis-cli prints bulk
/// strings so): \\ \" \n \r \t \a \b escaped, \xhh for any other byte outside 0x20-0x7e.
std::string quote_repr(std::string_view bytes);

/// `word` written so that split_args() reads it back byte for byte as one word: bare when
/// it is not empty and all printable ASCII other than quotes and backslash, otherwise
/// quote_repr(word), as CONFIG REWRITE writes values.
std::string quote_arg(std::string_view word);

}  // namespace keyshift::engine

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

}  // namespace keyshift::engine

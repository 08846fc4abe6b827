// Small shared helpers: hashing, encoding, files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"

namespace trainyard {

// Lower-case hex SHA-256 of data.
std::string Sha256Hex(std::string_view data);
// Lower-case hex SHA-256 of a file's contents.
Result<std::string> Sha256FileHex(const std::string& path);
std::string Base64Encode(std::string_view data);
Result<std::string> Base64Decode(std::string_view data);
// 8 random bytes, base64 (the shape of AI Platform's etags).
std::string RandomEtag();

Result<std::string> ReadFile(const std::string& path);
// Replaces path with data atomically: writes a uniquely named temp file beside it, fsyncs it
// when `durable` (skip that for small files rewritten often, e.g. cursors), and renames it over
// path. Concurrent writers never share a temp file. The temp file is removed on failure.
Status WriteFileAtomic(const std::string& path, std::string_view data, bool durable = true);
Status MakeDirs(const std::string& path);

// RFC 3986 percent-encoding of one URI component: unreserved characters stay, all else is %XX.
std::string PercentEncode(std::string_view s);
// Decodes %XX escapes ('+' stays '+'); INVALID_ARGUMENT names the text on a malformed escape.
Result<std::string> PercentDecode(std::string_view s);

std::vector<std::string> Split(std::string_view s, char sep);
// `s` without leading and trailing ASCII whitespace (space, \t, \n, \r, \f, \v).
std::string Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

}  // namespace trainyard

// Small, allocation-light JSON text writers shared by the model's serialisers (private header).
#pragma once

#include <string>
#include <string_view>

namespace trainyard::model::internal {

// Appends `s` as a quoted JSON string (RFC 8259 escapes; UTF-8 passes through).
void AppendJsonString(std::string* out, std::string_view s);
// Appends a finite double the way proto3 JSON prints it: integral values without a fraction
// ("1", not "1.0"), otherwise the shortest text that round-trips ("0.0001", "1e-05").
// Non-finite values, which JSON cannot carry, are written as 0.
void AppendJsonDouble(std::string* out, double d);
void AppendJsonInt(std::string* out, long long v);

}  // namespace trainyard::model::internal

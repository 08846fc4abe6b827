// Quantities as people read them.
#pragma once

#include <cstdint>
#include <string>

namespace trainyard {

// Binary units with one decimal: "512 B", "1.5 KiB", "24.0 MiB", "3.2 GiB".
std::string FormatBytes(int64_t bytes);

}  // namespace trainyard

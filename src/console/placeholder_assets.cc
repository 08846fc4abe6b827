// The console files of a build without the console: Node.js or the console's npm dependencies
// were missing when CMake configured (see docs/console.md). One page that says so.
#include "trainyard/console/console.h"

namespace trainyard::console {

namespace {

constexpr char kIndex[] =
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    "<title>Trainyard</title></head><body>\n"
    "<h1>Trainyard</h1>\n"
    "<p>This trainyardd was built without its web console: Node.js or the console's npm "
    "dependencies were missing when it was configured.</p>\n"
    "<p>Run <code>scripts/install-deps.sh</code> (Debian's Node.js and npm, then "
    "<code>npm ci</code> in <code>console/</code>), then rebuild with "
    "<code>scripts/build.sh</code>. The REST API works without the console: "
    "<a href=\"/v1/help\">/v1/help</a>.</p>\n"
    "</body></html>\n";

const ConsoleAsset kAssets[] = {
    {"index.html", "text/html; charset=utf-8", "\"placeholder-1\"", false,
     reinterpret_cast<const unsigned char*>(kIndex), sizeof kIndex - 1, nullptr, 0},
};

}  // namespace

std::span<const ConsoleAsset> EmbeddedAssets() { return kAssets; }
bool IsPlaceholder() { return true; }

}  // namespace trainyard::console

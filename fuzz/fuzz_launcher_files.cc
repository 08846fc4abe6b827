// The launcher's work-dir files that the daemon reads back (launcher_protocol.h): the input's
// first byte picks spec.json, exit.json, a log record line or launcher.pid; the rest is the file.
// Whatever parses prints back to a text that parses to the same thing.
#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proc_util.h"
#include "trainyard/executor/launcher_protocol.h"

namespace te = trainyard::executor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto spec = te::SpecFromJson(text);
      if (!spec.ok()) return 0;
      std::string once = te::SpecToJson(*spec);
      auto again = te::SpecFromJson(once);
      if (!again.ok() || te::SpecToJson(*again) != once) std::abort();
      return 0;
    }
    case 1: {
      auto exit = te::ExitFromJson(text);
      if (!exit.ok()) return 0;
      std::string once = te::ExitToJson(*exit);
      auto again = te::ExitFromJson(once);
      if (!again.ok() || te::ExitToJson(*again) != once) std::abort();
      return 0;
    }
    case 2: {
      auto rec = te::ParseLogRecord(text);
      if (!rec.ok()) return 0;
      auto again = te::ParseLogRecord(
          te::FormatLogRecord(rec->ts, rec->severity, rec->service, rec->message));
      if (!again.ok() || again->ts != rec->ts || again->severity != rec->severity ||
          again->service != rec->service || again->message != rec->message) {
        std::abort();
      }
      te::LogRecord into;
      if (!te::ParseLogRecordInto(text, &into).ok() || into.message != rec->message) std::abort();
      return 0;
    }
    default: {
      pid_t pid = 0;
      uint64_t start = 0;
      if (!te::ParsePidFile(text, &pid, &start)) return 0;
      pid_t pid2 = 0;
      uint64_t start2 = 0;
      if (!te::ParsePidFile(te::FormatPidFile(pid, start), &pid2, &start2) || pid2 != pid ||
          start2 != start) {
        std::abort();
      }
      return 0;
    }
  }
}

// Reading the cloudml-hypertune metric file (the executor reads it; the scheduler gets records)
// (compat §7): one JSON object per line, rewritten whole on every report and cut to the last 100
// records; the metric and global_step are strings, timestamp is a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/executor/executor.h"

namespace trainyard::executor {

// The records of `tag` in a metric file's text, in file order. Lines that are not JSON objects,
// lack the tag, or whose value is not a finite number are skipped (a trainer's file is input).
std::vector<MetricRecord> ParseMetricFile(std::string_view text, const std::string& tag);

// The metric tags a metric file's records carry, sorted and unique: every key of a record whose
// value is a number (or a string holding one), except hypertune's own fields (timestamp,
// trial, global_step, checkpoint_path). For saying which tags a trial reported when it did not
// report the job's (docs/tuning.md). At most kMaxMetricTags tags of at most kMaxMetricTagBytes
// bytes each (longer ones cut, with "..."): the file is the trainer's.
inline constexpr size_t kMaxMetricTags = 20;
inline constexpr size_t kMaxMetricTagBytes = 100;
std::vector<std::string> MetricTagsInFile(std::string_view text);

// Reads a metric file written by a trainer, which may be anything (a FIFO, a symlink to
// /dev/zero, a huge file): only a regular file, without blocking or following a symlink, and
// only its last MiB (hypertune keeps 100 short lines). nullopt when there is no such file.
std::optional<std::string> ReadMetricFile(const std::string& path);

}  // namespace trainyard::executor

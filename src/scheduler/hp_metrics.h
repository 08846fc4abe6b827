// Reading the cloudml-hypertune metric file (compat §7): one JSON object per line, rewritten
// whole on every report and cut to the last 100 records; the metric and global_step are strings,
// timestamp is a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainyard::scheduler {

struct MetricRecord {
  double timestamp = 0;
  int64_t step = 0;
  double value = 0;
};

// The records of `tag` in a metric file's text, in file order. Lines that are not JSON objects,
// lack the tag, or whose value is not a finite number are skipped (a trainer's file is input).
std::vector<MetricRecord> ParseMetricFile(std::string_view text, const std::string& tag);

// The record finalMetric reports: the latest timestamp, ties broken by the highest step.
std::optional<MetricRecord> LatestRecord(const std::vector<MetricRecord>& records);

}  // namespace trainyard::scheduler

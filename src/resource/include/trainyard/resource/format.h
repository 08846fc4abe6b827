// gcloud's --format expressions (`gcloud topic formats`, `gcloud topic projections`) and the
// printers Trainyard renders from them:
//
//   NAME[ATTRIBUTES](KEY[.transform(...)][:label=L][:align=right][:sort=N][:reverse], ...)
//
//   table   aligned columns with ANGRY_SNAKE_CASE headings (or :label=), two spaces apart;
//           [box], [no-heading], [title=T]; :sort=N orders the rows
//   value   tab-separated values, no heading; [separator=S], [terminator=T], [delimiter=D]
//           (between list items, default ";"), [quote]
//   get     the same as value
//   csv     comma-separated, a lower-case heading unless [no-heading], values quoted when needed
//   json, yaml  the whole resource, or with (KEYS) only those keys
//   none    nothing
// The `sort_by` helper applies gcloud's --sort-by.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trainyard/core/status.h"
#include "trainyard/resource/value.h"

namespace trainyard::resource {

struct Column {
  Key key;
  std::vector<Call> transforms;
  std::string label;
  enum class Align { kLeft, kCenter, kRight } align = Align::kLeft;
  int sort = 0;  // 0 = not a sort key; else its precedence (1 first)
  bool reverse = false;
  bool label_generated = false;  // the label is the ANGRY_SNAKE_CASE of the key
  bool align_given = false;
};

struct Format {
  std::string name;  // table, value, get, csv, json, yaml, none
  std::map<std::string, std::string> attributes;
  bool has_projection = false;  // a (...) was given
  std::vector<Column> columns;

  bool Has(const std::string& attr) const { return attributes.count(attr) > 0; }
};

// INVALID_ARGUMENT with gcloud's message for a bad expression or a format Trainyard does not
// print (flattened, list, text, multi, config, diff, object, disable).
//
// `defaults` is the command's default format, which gcloud puts before an explicit --format:
// a column whose key is also a column of the default keeps the default's label, transforms and
// alignment unless it gives its own (`--format='table(jobId,state)'` on `jobs list` heads the
// state column STATUS, as the default table does).
Result<Format> ParseFormat(std::string_view text, const Format* defaults = nullptr);

// One value per column.
std::vector<Json> Project(const Format& format, const Json& resource);

// The resource reduced to the projected keys (json(...) and yaml(...)).
Json ProjectObject(const Format& format, const Json& resource);

// table, value, get, csv and none output for a list of resources ("" for no resources).
std::string Render(const Format& format, const std::vector<Json>& resources);

// --sort-by: keys (`createTime`, `~jobId` for descending, `labels.owner`), applied as gcloud
// does: values compared as Python's str() of the value (a missing one as "None"), stable.
// INVALID_ARGUMENT for a bad key. gcloud sorts the decoded messages, not their JSON, and cannot
// look into a proto map field (`labels.owner` is None for every job): `map_fields` names such
// fields (`labels`), and a key that goes into one sorts as None too.
Status SortBy(const std::vector<std::string>& keys, std::vector<Json>* resources,
              const std::vector<std::string>& map_fields = {});

}  // namespace trainyard::resource

// ConfigFileToJobJson: a gcloud --config file (YAML or JSON) to Job JSON text.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "job_schema.h"
#include "trainyard/model/job_json.h"

namespace trainyard::model {
namespace {

using nlohmann::ordered_json;
using schema::FieldDef;
using schema::Kind;
using schema::Label;
using schema::MessageDef;

constexpr int kMaxDepth = 64;

struct ConvertError {
  std::string message;
};

std::string Where(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return "";
  return " at line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
}

bool IsPlain(const YAML::Node& n) { return n.Tag() == "?" || n.Tag().empty(); }

bool IsNullText(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> BoolText(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

std::optional<int64_t> IntText(const std::string& s) {
  std::string_view v = s;
  if (!v.empty() && v[0] == '+') v.remove_prefix(1);
  if (v.empty()) return std::nullopt;
  int64_t out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) return std::nullopt;
  return out;
}

// YAML 1.2 core-schema floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
std::optional<double> FloatText(const std::string& s) {
  std::string_view v = s;
  if (!v.empty() && (v[0] == '+' || v[0] == '-')) v.remove_prefix(1);
  if (v.empty() || !(std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '.')) {
    return std::nullopt;
  }
  std::string_view body = s;
  if (!body.empty() && body[0] == '+') body.remove_prefix(1);
  double out = 0;
  auto r = std::from_chars(body.data(), body.data() + body.size(), out);
  if (r.ec != std::errc() || r.ptr != body.data() + body.size() || !std::isfinite(out)) {
    return std::nullopt;
  }
  return out;
}

// A plain scalar with no schema to guide it: null, bool, integer, float or string.
ordered_json GenericScalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (!IsPlain(n)) return s;
  if (IsNullText(s)) return nullptr;
  if (auto b = BoolText(s)) return *b;
  if (auto i = IntText(s)) return *i;
  if (auto d = FloatText(s)) return *d;
  return s;
}

// A scalar for a known field: string-typed fields keep the text exactly as written (so
// `runtimeVersion: 1.10` stays "1.10"), numeric and bool fields become JSON numbers and bools
// when the text is one; anything else is passed on as a string for the server to judge.
ordered_json FieldScalar(const YAML::Node& n, const FieldDef& f) {
  const std::string& s = n.Scalar();
  if (IsPlain(n) && IsNullText(s)) return nullptr;
  switch (f.kind) {
    case Kind::kString:
    case Kind::kEnum:
    case Kind::kDuration:
      return s;
    case Kind::kBool:
      if (IsPlain(n)) {
        if (auto b = BoolText(s)) return *b;
      }
      return s;
    case Kind::kInt32:
    case Kind::kInt64:
      if (IsPlain(n)) {
        if (auto i = IntText(s)) return *i;
      }
      return s;
    case Kind::kDouble:
      if (IsPlain(n)) {
        if (auto i = IntText(s)) return *i;
        if (auto d = FloatText(s)) return *d;
      }
      return s;
    case Kind::kMessage:
    case Kind::kIgnored:
      break;
  }
  return GenericScalar(n);
}

// `field`: the field this node is the value (or, for repeated fields, an element) of; null when
// unknown. `message`: the message this node is, when it is a known message.
ordered_json Convert(const YAML::Node& n, const FieldDef* field, const MessageDef* message,
                     bool map_field, int depth) {
  if (depth > kMaxDepth) throw ConvertError{"nesting deeper than 64 levels" + Where(n)};
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return field != nullptr && !map_field ? FieldScalar(n, *field)
             : map_field                    ? ordered_json(n.Scalar())
                                            : GenericScalar(n);
    case YAML::NodeType::Sequence: {
      ordered_json arr = ordered_json::array();
      for (const YAML::Node& e : n) arr.push_back(Convert(e, field, message, false, depth + 1));
      return arr;
    }
    case YAML::NodeType::Map: {
      ordered_json obj = ordered_json::object();
      std::set<std::string> keys;
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!it->first.IsScalar())
          throw ConvertError{"mapping keys must be scalars" + Where(it->first)};
        const std::string key = it->first.Scalar();
        if (!keys.insert(key).second) {
          throw ConvertError{"duplicate key \"" + key + "\"" + Where(it->first)};
        }
        const FieldDef* f = map_field ? field : nullptr;
        const MessageDef* sub = nullptr;
        bool sub_map = false;
        if (message != nullptr) {
          f = message->Find(key);
          if (f != nullptr) {
            sub = f->kind == Kind::kMessage ? f->message : nullptr;
            sub_map = f->label == Label::kMap;
          }
        }
        if (map_field) {  // a map<string, string> entry: the value is a string
          obj[key] = it->second.IsScalar()
                         ? ordered_json(it->second.Scalar())
                         : Convert(it->second, nullptr, nullptr, false, depth + 1);
        } else {
          obj[key] = Convert(it->second, f, sub, sub_map, depth + 1);
        }
      }
      return obj;
    }
  }
  return nullptr;
}

}  // namespace

Result<std::string> ConfigFileToJobJson(std::string_view yaml_or_json) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml_or_json));
    if (!root.IsMap()) {
      return InvalidArgument(
          "config file must be a mapping with trainingInput (and optionally jobId and labels) "
          "at the top level" +
          Where(root));
    }
    ordered_json job = Convert(root, nullptr, &schema::Job(), false, 0);
    return job.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  } catch (const YAML::Exception& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = " at line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1);
    }
    return InvalidArgument("invalid config file: " + e.msg + where);
  } catch (const ConvertError& e) {
    return InvalidArgument("invalid config file: " + e.message);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("invalid config file: ") + e.what());
  }
}

}  // namespace trainyard::model

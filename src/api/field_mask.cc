#include "field_mask.h"

#include <cctype>
#include <vector>

namespace trainyard::api {

using ojson = nlohmann::ordered_json;

FieldMask::FieldMask(const FieldMask& other)
    : whole(other.whole),
      children(other.children),
      any(other.any ? std::make_unique<FieldMask>(*other.any) : nullptr) {}

FieldMask& FieldMask::operator=(const FieldMask& other) {
  if (this != &other) {
    whole = other.whole;
    children = other.children;
    any = other.any ? std::make_unique<FieldMask>(*other.any) : nullptr;
  }
  return *this;
}

bool FieldMask::operator==(const FieldMask& other) const {
  if (whole != other.whole || children != other.children) return false;
  if (!any || !other.any) return !any && !other.any;
  return *any == *other.any;
}

namespace {

void AppendSelection(std::string* out, std::string_view name, const FieldMask& m) {
  if (!out->empty()) out->push_back(',');
  out->append(name);
  if (!m.whole) out->append("(" + m.ToString() + ")");
}

}  // namespace

std::string FieldMask::ToString() const {
  std::string out;
  for (const auto& [name, child] : children) AppendSelection(&out, name, child);
  if (any) AppendSelection(&out, "*", *any);
  return out;
}

namespace {

// Adds everything `from` selects to `into`.
void Merge(FieldMask* into, const FieldMask& from) {
  if (from.whole) into->whole = true;
  for (const auto& [name, child] : from.children) Merge(&into->children[name], child);
  if (from.any) {
    if (!into->any) into->any = std::make_unique<FieldMask>();
    Merge(into->any.get(), *from.any);
  }
}

// A field selected whole needs no sub-selection: dropping them makes equal masks equal.
void Normalize(FieldMask* m) {
  if (m->whole) {
    m->children.clear();
    m->any.reset();
    return;
  }
  for (auto& [name, child] : m->children) Normalize(&child);
  if (m->any) Normalize(m->any.get());
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<FieldMask> Parse() {
    FieldMask mask;
    TRAINYARD_RETURN_IF_ERROR(ParseList(&mask, 0));
    SkipSpaces();
    if (pos_ != text_.size()) {
      return Error(text_[pos_] == ')' ? "unbalanced ')'" : "expected ',' or the end");
    }
    Normalize(&mask);
    return mask;
  }

 private:
  Status Error(const std::string& what) const {
    std::string message = "Invalid field selection \"" + std::string(text_) +
                          "\" (the fields parameter): " + what + " at position " +
                          std::to_string(pos_ + 1);
    return Status(StatusCode::kInvalidArgument, message)
        .AddViolation("fields", "a field mask such as jobs(jobId,state),nextPageToken: " + what +
                                    " at position " + std::to_string(pos_ + 1));
  }

  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }

  bool Accept(char c) {
    SkipSpaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Result<std::string> Name() {
    SkipSpaces();
    if (pos_ < text_.size() && text_[pos_] == '*') {
      ++pos_;
      return std::string("*");
    }
    size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    if (pos_ == start) {
      return Error(pos_ == text_.size()
                       ? "expected a field name, found the end"
                       : "expected a field name, found '" + std::string(1, text_[pos_]) + "'");
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  // selection ("," selection)*, merged into `into`.
  Status ParseList(FieldMask* into, int depth) {
    if (depth > kMaxFieldMaskDepth) return Error("nested too deeply");
    do {
      TRAINYARD_RETURN_IF_ERROR(ParseSelection(into, depth));
    } while (Accept(','));
    return Status::Ok();
  }

  Status ParseSelection(FieldMask* into, int depth) {
    std::vector<std::string> path;
    do {
      if (static_cast<int>(path.size()) + depth > kMaxFieldMaskDepth) {
        return Error("nested too deeply");
      }
      TRAINYARD_ASSIGN_OR_RETURN(std::string name, Name());
      path.push_back(std::move(name));
    } while (Accept('/'));
    FieldMask* target = into;
    for (const std::string& name : path) {
      if (name == "*") {
        if (!target->any) target->any = std::make_unique<FieldMask>();
        target = target->any.get();
      } else {
        target = &target->children[name];
      }
    }
    if (Accept('(')) {
      FieldMask sub;
      TRAINYARD_RETURN_IF_ERROR(ParseList(&sub, depth + static_cast<int>(path.size())));
      if (!Accept(')')) return Error("expected ')'");
      Merge(target, sub);
    } else {
      target->whole = true;
    }
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Result<FieldMask> ParseFieldMask(std::string_view text) {
  if (text.size() > kMaxFieldMaskBytes) {
    return Status(StatusCode::kInvalidArgument,
                  "Invalid field selection (the fields parameter): longer than " +
                      std::to_string(kMaxFieldMaskBytes) + " bytes")
        .AddViolation("fields", "at most " + std::to_string(kMaxFieldMaskBytes) + " bytes");
  }
  return Parser(text).Parse();
}

ojson ApplyFieldMask(const ojson& value, const FieldMask& mask) {
  if (mask.whole) return value;
  if (value.is_array()) {
    ojson out = ojson::array();
    for (const auto& element : value) out.push_back(ApplyFieldMask(element, mask));
    return out;
  }
  if (!value.is_object()) return value;  // a selection below a scalar keeps the scalar
  ojson out = ojson::object();
  for (const auto& [key, v] : value.items()) {
    auto named = mask.children.find(key);
    const FieldMask* child = named == mask.children.end() ? nullptr : &named->second;
    const FieldMask* any = mask.any.get();
    if (child == nullptr && any == nullptr) continue;
    ojson selected;
    if ((child != nullptr && child->whole) || (any != nullptr && any->whole)) {
      selected = v;
    } else if (child != nullptr && any != nullptr) {
      FieldMask both = *child;
      Merge(&both, *any);
      selected = ApplyFieldMask(v, both);
    } else {
      selected = ApplyFieldMask(v, child != nullptr ? *child : *any);
    }
    if (selected.is_object() && selected.empty() && !(v.is_object() && v.empty())) continue;
    out[key] = std::move(selected);
  }
  return out;
}

Result<std::string> ApplyFieldMaskToText(std::string_view json_text, const FieldMask& mask) {
  ojson value = ojson::parse(json_text, nullptr, false);
  if (value.is_discarded()) {
    return Status(StatusCode::kInternal, "the answer to mask with fields= is not JSON");
  }
  return ApplyFieldMask(value, mask).dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace trainyard::api

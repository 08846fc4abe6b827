// A small, fast JSON writer and reader for the store's own column encodings (labels_json,
// spec_json): objects whose values are strings, integers, booleans or arrays of strings.
// nlohmann::json costs several microseconds per row, which dominates filtered list scans; this
// reader is allocation-light and 5-10x faster. Any well-formed JSON is accepted (values of other
// types can be skipped); malformed text is an error, never a crash. Private to src/store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainyard::store::sqlite {

// Appends JSON text to a string. The caller writes a well-formed sequence of calls.
class JsonWriter {
 public:
  void BeginObject() {
    Sep();
    out_ += '{';
    first_ = true;
  }
  void EndObject() {
    out_ += '}';
    first_ = false;
  }
  void Key(std::string_view key) {
    Sep();
    AppendString(key);
    out_ += ':';
    first_ = true;
  }
  void String(std::string_view value) {
    Sep();
    AppendString(value);
  }
  void Int(int64_t value) {
    Sep();
    out_ += std::to_string(value);
  }
  void Bool(bool value) {
    Sep();
    out_ += value ? "true" : "false";
  }
  void StringArray(const std::vector<std::string>& values);
  std::string Take() { return std::move(out_); }

 private:
  void Sep() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  void AppendString(std::string_view s);

  std::string out_;
  bool first_ = true;
};

// Reads one JSON object member by member:
//   JsonReader r(text);
//   if (!r.BeginObject()) error;
//   std::string_view key;  std::string scratch;
//   while (r.NextKey(&key, &scratch)) { if (key == "a") r.ReadString(&a); else r.Skip(); }
//   if (!r.ok()) error;
// After the first failure every call returns false and ok() is false.
class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : s_(text) {}

  bool BeginObject();
  // The next member's key (valid until the next call; `scratch` holds it when it had escapes).
  // false at the end of the object (then checks that only whitespace follows) or on error.
  bool NextKey(std::string_view* key, std::string* scratch);
  bool ReadString(std::string* out);
  bool ReadInt(int64_t* out);
  bool ReadBool(bool* out);
  bool ReadStringArray(std::vector<std::string>* out);
  // Skips any JSON value.
  bool Skip();

  bool ok() const { return ok_; }
  // Byte offset of the first error (for messages).
  size_t error_offset() const { return error_at_; }

 private:
  bool Fail();
  void Ws();
  bool Expect(char c);
  bool ParseString(std::string* out);
  bool SkipValue(int depth);

  std::string_view s_;
  size_t i_ = 0;
  bool ok_ = true;
  bool first_member_ = true;
  size_t error_at_ = 0;
};

}  // namespace trainyard::store::sqlite

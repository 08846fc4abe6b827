#include "log_chunk.h"

namespace trainyard::store::sqlite {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// false when `data` ends or the varint is longer than 10 bytes.
bool GetVarint(std::string_view data, size_t* pos, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70 && *pos < data.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(data[(*pos)++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

}  // namespace

void AppendLogLine(std::string* data, int64_t* prev_timestamp, int64_t timestamp, int64_t severity,
                   std::string_view message) {
  // Wrapping subtraction: any pair of timestamps round-trips.
  PutVarint(data, ZigZag(static_cast<int64_t>(static_cast<uint64_t>(timestamp) -
                                              static_cast<uint64_t>(*prev_timestamp))));
  *prev_timestamp = timestamp;
  PutVarint(data, ZigZag(severity));
  PutVarint(data, message.size());
  data->append(message);
}

Result<bool> LogChunkReader::Next(DecodedLogLine* line) {
  if (pos_ == data_.size()) return false;
  uint64_t delta = 0;
  uint64_t severity = 0;
  uint64_t size = 0;
  if (!GetVarint(data_, &pos_, &delta) || !GetVarint(data_, &pos_, &severity) ||
      !GetVarint(data_, &pos_, &size) || size > data_.size() - pos_) {
    return Internal("corrupt log chunk at byte " + std::to_string(pos_));
  }
  prev_timestamp_ = static_cast<int64_t>(static_cast<uint64_t>(prev_timestamp_) +
                                         static_cast<uint64_t>(UnZigZag(delta)));
  line->timestamp = prev_timestamp_;
  line->severity = UnZigZag(severity);
  line->message = data_.substr(pos_, size);
  pos_ += size;
  return true;
}

}  // namespace trainyard::store::sqlite

#include "analyzer/driver/lowering_memo.h"

#include "analyzer/driver/build_id.h"
#include "hlo/fingerprint.h"
#include "hlo/probe_unit.h"

namespace opprobe::analyzer {
namespace {

// The encoding's own version: the first byte of every value.
constexpr char kFormat = '1';

void PutSize(std::string& out, uint64_t n) {
  while (n >= 0x80) {
    out += static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  out += static_cast<char>(n);
}

void PutString(std::string& out, std::string_view s) {
  PutSize(out, s.size());
  out += s;
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == in_.size(); }
  char Byte() {
    if (pos_ >= in_.size()) return Fail(), '\0';
    return in_[pos_++];
  }
  uint64_t Size() {
    uint64_t n = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto b = static_cast<unsigned char>(Byte());
      if (!ok_) return 0;
      n |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return n;
    }
    return Fail(), 0;
  }
  std::string String() {
    const uint64_t n = Size();
    if (!ok_ || n > in_.size() - pos_) return Fail(), std::string();
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  uint64_t Fixed64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(Byte())) << (8 * i);
    return v;
  }

 private:
  void Fail() { ok_ = false; }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

uint64_t LoweringMemoKey(std::string_view signature_key) {
  const std::string& build = BuildId();
  if (build.empty()) return 0;
  uint64_t h = hlo::kFnv1a64Basis;
  for (std::string_view part : {std::string_view("lowering-memo-1"), std::string_view(build),
                                hlo::kFingerprintScheme, signature_key})
    h = hlo::Fnv1a64(std::string_view("\0", 1), hlo::Fnv1a64(part, h));
  return h == 0 ? 1 : h;
}

std::string EncodeLoweringOutcome(const LoweringOutcome& o) {
  std::string out;
  out += kFormat;
  out += static_cast<char>(o.kind);
  PutString(out, o.error);
  out += o.dynamic_shape ? '1' : '0';
  PutString(out, o.note);
  PutSize(out, o.units.size());
  for (const MemoUnit& u : o.units) {
    for (int i = 0; i < 8; ++i) out += static_cast<char>((u.hash >> (8 * i)) & 0xff);
    PutString(out, u.opcode);
    PutString(out, u.signature);
    PutString(out, u.name);
    PutString(out, u.attributed_to);
  }
  return out;
}

std::optional<LoweringOutcome> DecodeLoweringOutcome(std::string_view value) {
  Reader r(value);
  if (r.Byte() != kFormat) return std::nullopt;
  LoweringOutcome o;
  const char kind = r.Byte();
  if (kind != 'c' && kind != 'e' && kind != 'o') return std::nullopt;
  o.kind = static_cast<LoweringOutcome::Kind>(kind);
  o.error = r.String();
  const char dynamic = r.Byte();
  if (dynamic != '0' && dynamic != '1') return std::nullopt;
  o.dynamic_shape = dynamic == '1';
  o.note = r.String();
  const uint64_t n = r.Size();
  if (!r.ok() || n > value.size()) return std::nullopt;  // each unit takes more than one byte
  o.units.resize(n);
  for (MemoUnit& u : o.units) {
    u.hash = r.Fixed64();
    u.opcode = r.String();
    u.signature = r.String();
    u.name = r.String();
    u.attributed_to = r.String();
    if (!r.ok()) return std::nullopt;
  }
  if (!r.done()) return std::nullopt;
  return o;
}

}  // namespace opprobe::analyzer

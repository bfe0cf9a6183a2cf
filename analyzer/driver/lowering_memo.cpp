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
  std::string_view String() {
    const uint64_t n = Size();
    if (!ok_ || n > in_.size() - pos_) return Fail(), std::string_view();
    std::string_view s = in_.substr(pos_, n);
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
  // What the key depends on besides the call (the memo's own version, the build, the fingerprint scheme), hashed
  // once; the signature key (a few hundred bytes) is hashed 8 bytes a step after it. The build ID changes with every
  // build, so a build's keys (and how they are hashed) are its own.
  static const uint64_t prefix = [] {
    const std::string& build = BuildId();
    if (build.empty()) return uint64_t{0};
    uint64_t h = 0;
    for (std::string_view part :
         {std::string_view("lowering-memo-2"), std::string_view(build), hlo::kFingerprintScheme})
      h = hlo::HashBytes(part, h);
    return h == 0 ? 1 : h;
  }();
  if (prefix == 0) return 0;
  const uint64_t h = hlo::HashBytes(signature_key, prefix);
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

std::optional<LoweringOutcomeView> DecodeLoweringOutcomeView(std::string_view value) {
  Reader r(value);
  if (r.Byte() != kFormat) return std::nullopt;
  LoweringOutcomeView o;
  const char kind = r.Byte();
  if (kind != 'c' && kind != 'e' && kind != 'i' && kind != 'o') return std::nullopt;
  o.kind = static_cast<LoweringOutcome::Kind>(kind);
  o.error = r.String();
  const char dynamic = r.Byte();
  if (dynamic != '0' && dynamic != '1') return std::nullopt;
  o.dynamic_shape = dynamic == '1';
  o.note = r.String();
  const uint64_t n = r.Size();
  if (!r.ok() || n > value.size()) return std::nullopt;  // each unit takes more than one byte
  o.units.resize(n);
  for (MemoUnitView& u : o.units) {
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

std::optional<LoweringOutcome> DecodeLoweringOutcome(std::string_view value) {
  std::optional<LoweringOutcomeView> v = DecodeLoweringOutcomeView(value);
  if (!v) return std::nullopt;
  LoweringOutcome o;
  o.kind = v->kind;
  o.error = v->error;
  o.dynamic_shape = v->dynamic_shape;
  o.note = v->note;
  o.units.reserve(v->units.size());
  for (const MemoUnitView& u : v->units)
    o.units.push_back(MemoUnit{u.hash, std::string(u.opcode), std::string(u.signature), std::string(u.name),
                               std::string(u.attributed_to)});
  return o;
}

}  // namespace opprobe::analyzer

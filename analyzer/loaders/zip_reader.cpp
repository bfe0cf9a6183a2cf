#include "analyzer/loaders/zip_reader.h"

#include <fmt/format.h>
#include <zip.h>

namespace opprobe::analyzer {

namespace {

std::string ZipErrorText(int code) {
  zip_error_t err;
  zip_error_init_with_code(&err, code);
  std::string text = zip_error_strerror(&err);
  zip_error_fini(&err);
  return text;
}

// Entry names are shown quoted and cut short, with control bytes escaped, so a hostile name cannot
// produce a multi-line or enormous message.
std::string Printable(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 200)) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  if (name.size() > 200) out += "...";
  return out;
}

}  // namespace

ZipReader::~ZipReader() {
  if (zip_) zip_discard(zip_);
}

bool ZipReader::IsUnsafeName(std::string_view name) {
  if (name.empty()) return true;
  if (name[0] == '/' || name[0] == '\\') return true;
  if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<unsigned char>(name[0]))) return true;
  if (name.find('\0') != std::string_view::npos) return true;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find_first_of("/\\", start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return true;
    start = end + 1;
  }
  return false;
}

Expected<std::unique_ptr<ZipReader>> ZipReader::Open(const std::string& path) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!z) {
    if (code == ZIP_ER_NOZIP) return InvalidInput(fmt::format("{}: not a zip archive", path));
    if (code == ZIP_ER_OPEN || code == ZIP_ER_NOENT || code == ZIP_ER_READ)
      return InvalidInput(fmt::format("{}: cannot open: {}", path, ZipErrorText(code)));
    return InvalidInput(fmt::format("{}: damaged zip archive: {}", path, ZipErrorText(code)));
  }
  std::unique_ptr<ZipReader> reader(new ZipReader());
  reader->zip_ = z;
  reader->path_ = path;
  zip_int64_t n = zip_get_num_entries(z, 0);
  if (n < 0) return InvalidInput(fmt::format("{}: damaged zip archive: cannot count entries", path));
  reader->entries_.reserve(static_cast<size_t>(n));
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0)
      return InvalidInput(fmt::format("{}: damaged zip archive: entry #{}: {}", path, i, zip_strerror(z)));
    if (!(st.valid & ZIP_STAT_NAME) || !st.name) return InvalidInput(fmt::format("{}: entry #{} has no name", path, i));
    Entry e;
    e.name = st.name;
    if (IsUnsafeName(e.name))
      return InvalidInput(
          fmt::format("{}: entry '{}': unsafe entry name (absolute path or '..' component)", path, Printable(e.name)));
    e.size = (st.valid & ZIP_STAT_SIZE) ? st.size : 0;
    e.compressed_size = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
    e.method = (st.valid & ZIP_STAT_COMP_METHOD) ? static_cast<uint16_t>(st.comp_method) : 0;
    e.index = static_cast<uint64_t>(i);
    reader->entries_.push_back(std::move(e));
  }
  return reader;
}

const ZipReader::Entry* ZipReader::Find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

Expected<std::string> ZipReader::Read(const Entry& entry, const Limits& limits) const {
  const std::string where = fmt::format("{}: entry '{}'", path_, Printable(entry.name));
  if (entry.size > limits.max_entry_size)
    return InvalidInput(fmt::format("{}: declared size {} bytes exceeds the {} byte limit for program entries", where,
                                    entry.size, limits.max_entry_size));
  if (entry.method == ZIP_CM_STORE && entry.compressed_size != entry.size)
    return InvalidInput(fmt::format("{}: declared sizes do not match (stored entry, {} bytes compressed vs {} bytes)",
                                    where, entry.compressed_size, entry.size));
  if (entry.size > limits.ratio_floor &&
      (entry.compressed_size == 0 || entry.size / entry.compressed_size > limits.max_ratio))
    return InvalidInput(fmt::format("{}: compression ratio {}:1 exceeds {}:1 (zip bomb?)", where,
                                    entry.compressed_size ? entry.size / entry.compressed_size : entry.size,
                                    limits.max_ratio));
  zip_file_t* f = zip_fopen_index(zip_, entry.index, 0);
  if (!f) return InvalidInput(fmt::format("{}: cannot read: {}", where, zip_strerror(zip_)));
  std::string data;
  data.resize(entry.size);
  uint64_t got = 0;
  Status status;
  while (got < entry.size) {
    zip_int64_t r = zip_fread(f, data.data() + got, entry.size - got);
    if (r < 0) {
      status = InvalidInput(fmt::format("{}: corrupt data: {}", where, zip_file_strerror(f)));
      break;
    }
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  if (status.ok() && got < entry.size)
    status = InvalidInput(fmt::format("{}: declared size {} bytes but it holds only {} bytes", where, entry.size, got));
  if (status.ok()) {
    // One more byte must not exist; libzip also checks the CRC at the end of the stream here.
    char extra;
    zip_int64_t r = zip_fread(f, &extra, 1);
    if (r > 0)
      status = InvalidInput(fmt::format("{}: holds more data than its declared size {} bytes", where, entry.size));
    else if (r < 0) status = InvalidInput(fmt::format("{}: corrupt data: {}", where, zip_file_strerror(f)));
  }
  zip_fclose(f);
  if (!status.ok()) return status;
  return data;
}

}  // namespace opprobe::analyzer

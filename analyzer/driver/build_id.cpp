#include "analyzer/driver/build_id.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace opprobe::analyzer {
namespace {

struct Search {
  uintptr_t address;  // of a function of this object
  std::string id;
};

std::string Hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

// The NT_GNU_BUILD_ID note among the PT_NOTE segments of the loaded object that contains search->address.
int FindBuildId(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  const uintptr_t addr = search->address;
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    contains = ph.p_type == PT_LOAD && addr >= start && addr < start + ph.p_memsz;
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    // The loader gives the segment as an address: an integer made a pointer is what the ELF interface is.
    const auto* p =
        reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);  // NOLINT(performance-no-int-to-ptr)
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const unsigned char* name = p + sizeof note;
      const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
      const unsigned char* next = desc + ((note.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          note.n_descsz > 0) {
        search->id = Hex(desc, note.n_descsz);
        return 1;
      }
      p = next;
    }
  }
  return 1;  // the object holding this code, without a build ID
}

}  // namespace

const std::string& BuildId() {
  static const std::string id = [] {
    Search search{reinterpret_cast<uintptr_t>(&BuildId), ""};
    dl_iterate_phdr(FindBuildId, &search);
    return search.id;
  }();
  return id;
}

}  // namespace opprobe::analyzer

// Seeds for hlo_proto_fuzzer: writes each HLO text file given on the command line as HloModuleProto bytes
// into OUT_DIR (scripts/fuzz runs it; files that do not parse or serialize are skipped).
// Usage: make_proto_seeds OUT_DIR FILE.hlo...
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "hlo/parser.h"
#include "hlo/proto_io.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: make_proto_seeds OUT_DIR FILE.hlo...\n";
    return 2;
  }
  int written = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto module = opprobe::hlo::ParseModule(ss.str(), argv[i]);
    if (!module.ok()) continue;
    auto bytes = opprobe::hlo::ModuleToProtoBytes(**module);
    if (!bytes.ok()) continue;
    std::ofstream out(std::string(argv[1]) + "/seed" + std::to_string(i) + ".pb", std::ios::binary);
    out << *bytes;
    ++written;
  }
  std::cout << written << " proto seeds\n";
  return 0;
}

// Where opprobe finds the files it runs besides itself: the pjrt worker program, the XLA worker script, the capture
// shim and its modules. Two layouts, each looked up from the running program (/proc/self/exe), never from the
// working directory:
//   - installed (`cmake --install build --prefix PREFIX`): PREFIX/bin/opprobe, the helper programs in
//     PREFIX/libexec/opprobe/, the capture package in PREFIX/share/opprobe/capture/; the prefix may be moved whole;
//   - the build tree, for a program built there (build/opprobe, a test binary under build/tests): the helpers in the
//     build folder beside build/opprobe, the capture package in the source tree's capture/.
// The installed place is tried first. A program outside the build tree never looks for these files in the checkout it
// was built from, so a file that an install left out is an error that names where it should be, not a silent use of
// the checkout's copy that works on the machine that built it and nowhere else. (The compilers' Python environments
// are the user's, not opprobe's files: compiler_probe/worker/python.h says where those are.)
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace opprobe::io {

// The folders, relative to the install prefix, that `cmake --install` fills (cli/CMakeLists.txt and
// compiler_probe/CMakeLists.txt install there).
inline constexpr std::string_view kInstalledHelperDir = "libexec/opprobe";
inline constexpr std::string_view kInstalledDataDir = "share/opprobe";

// Where helper program `name` (opprobe-pjrt-worker, opprobe-xla-worker.py) may be, in the order to try:
// PREFIX/libexec/opprobe/NAME, then, for a program of the build tree, BUILD/NAME.
std::vector<std::filesystem::path> HelperPlaces(std::string_view name);

// Where the folder of data `installed_name` (under share/opprobe) may be, in the order to try:
// PREFIX/share/opprobe/INSTALLED_NAME, then, for a program of the build tree, SOURCE/SOURCE_NAME (the folder of the
// source tree it is installed from: `capture` for the capture package).
std::vector<std::filesystem::path> DataPlaces(std::string_view installed_name, std::string_view source_name);

// The first of `places` that is a regular file (`file` appended to each when not empty); empty when none is.
std::string FirstFile(const std::vector<std::filesystem::path>& places, std::string_view file = {});

// `places` for a message: "A or B" (with `file` appended to each when not empty).
std::string DescribePlaces(const std::vector<std::filesystem::path>& places, std::string_view file = {});

// Whether the running program lies in the build folder this code was compiled in (what the places above depend on;
// for tests).
bool RunningFromBuildTree();

}  // namespace opprobe::io

#include "cli/app.h"

int main(int argc, char** argv) { return opprobe::cli::Run(argc, argv); }

#include "cli/cli.h"

int main(int argc, char** argv) { return nnmeter::cli::run(argc, argv); }

// Every subcommand of the crosspoint binary: one file each (cmd_<name>.cc), one entry
// point each. argv[0] is the subcommand's name.
#pragma once

namespace crosspoint::cli {

int run_generate(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_serve(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_sweep(int argc, char** argv);
int run_quantize(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_roofline(int argc, char** argv);
int run_hwinfo(int argc, char** argv);

}  // namespace crosspoint::cli

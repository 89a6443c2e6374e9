// The ring lab (`mcring-bench lab`): how keys spread over servers and move when servers change.
#pragma once

// Prints markdown tables to stdout; argv[0] is the command name ("lab"). Flags: --keys N,
// --trials N, --seed S, --quick, --help. Returns a process exit code. No network: it only uses
// mcring_routing.
int runLab(int argc, char** argv);

import TokenctlKit
#if canImport(Glibc)
import Glibc
#endif

// The one place tokenctl exits: commands throw `TokenctlError`, `Tokenctl.run` maps it to a
// status (sysexits, README, "Exit codes"), and the status is handed to the shell here.
exit(Tokenctl.runAsProcess(Array(CommandLine.arguments.dropFirst())))

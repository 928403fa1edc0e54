import TokendCore
import TokendProtocol
#if canImport(Glibc)
import Glibc
#endif

// The one place tokenctl exits: commands throw `TokenctlError`, `Tokenctl.run` maps it to a
// status (sysexits, README, "Exit codes"), and the status is handed to the shell here.
let arguments = Array(CommandLine.arguments.dropFirst())
// The plain `token` form (the one `Tokenctl.run` serves without ArgumentParser) reads few variables.
let plainToken = FastArguments(arguments, name: Tokenctl.Token.fastName).map { $0.trailing == nil } ?? false
let environment = Environment.process(only: plainToken ? Tokenctl.Token.variables : nil)
let status = Tokenctl.run(arguments, environment: environment, console: SystemConsole())
exit(status)

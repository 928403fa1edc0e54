// tokend: everything lives in TokendServer; this only parses the command line and runs it.
await TokendCommand.main()

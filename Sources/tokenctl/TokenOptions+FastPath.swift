import ArgumentParser

/// A command whose plain forms skip ArgumentParser: `token`, `header` and `exec`, which shell
/// loops and tools call over and over. ArgumentParser's first parse costs about 1.5 ms of type
/// reflection, a fifth of a call.
protocol FastParsedCommand: TokenctlCommand {
    /// The subcommand's word, also its `configuration.commandName`. ArgumentParser's own
    /// `_commandName` derives it through `String(describing:)` and runtime reflection, which was
    /// 45 % of a whole `tokenctl token` call (2.2 M of 5 M instructions, callgrind).
    static var fastName: String { get }
    var token: TokenOptions { get set }
    /// Takes what follows `--` (nil: there was no `--`); false when the command cannot take it.
    mutating func takeTrailing(_ arguments: [String]?) -> Bool
}

extension FastParsedCommand {
    mutating func takeTrailing(_ arguments: [String]?) -> Bool { arguments == nil }

    /// `NAME ACCOUNT [--min-valid S] [--kind K] [--scope S] [--audience A] [--socket P] [--timeout S]
    /// [-- CMD…]`, also with
    /// `--opt=value`. Anything else — help, a typo, a bad value — returns nil and takes the
    /// ArgumentParser path, which owns every error message; tests check both paths agree.
    static func parseFast(_ arguments: [String]) -> Self? {
        guard let fast = FastArguments(arguments, name: fastName) else { return nil }
        // Every property wrapper must be assigned: a default-made command has only definitions.
        var connection = ConnectionOptions()
        connection.socket = fast.socket
        connection.timeoutOption = fast.timeout
        var options = TokenOptions()
        options.account = fast.account
        options.minValid = fast.minValid
        options.kind = fast.kind
        options.scope = fast.scope
        options.audience = fast.audience
        options.connection = connection
        var command = Self()
        command.token = options
        guard command.takeTrailing(fast.trailing) else { return nil }
        do {
            try command.validate()
        } catch {
            return nil
        }
        return command
    }
}

/// The fast path's reading of `NAME ACCOUNT [options] [-- CMD…]` as plain values, validated as
/// `TokenOptions` and `ConnectionOptions` validate them; nil for anything else.
struct FastArguments {
    var account: String
    var minValid: Double?
    var kind: Tokenctl.KindArgument?
    var scope: String?
    var audience: String?
    var socket: String?
    var timeout: Double?
    var trailing: [String]?

    /// The values of options ArgumentParser has parsed.
    init(_ options: TokenOptions) {
        account = options.account
        minValid = options.minValid
        kind = options.kind
        scope = options.scope
        audience = options.audience
        socket = options.connection.socket
        timeout = options.connection.timeoutOption
    }

    init?(_ arguments: [String], name: String) {
        guard arguments.count >= 2, arguments[0] == name, !arguments[1].hasPrefix("-") else { return nil }
        account = arguments[1]
        var index = 2
        while index < arguments.count {
            var name = arguments[index]
            if name == "--" {
                trailing = Array(arguments[(index + 1)...])
                break
            }
            let value: String
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
                index += 1
            } else {
                guard index + 1 < arguments.count else { return nil }
                value = arguments[index + 1]
                index += 2
            }
            // A value that looks like an option is ArgumentParser's to diagnose.
            guard !value.hasPrefix("-") else { return nil }
            switch name {
            case "--min-valid":
                guard minValid == nil, let seconds = Double(value) else { return nil }
                minValid = seconds
            case "--kind":
                guard kind == nil, let value = Tokenctl.KindArgument(rawValue: value) else { return nil }
                kind = value
            case "--socket":
                guard socket == nil else { return nil }
                socket = value
            case "--timeout":
                guard timeout == nil, let seconds = Double(value) else { return nil }
                timeout = seconds
            case "--scope":
                guard scope == nil else { return nil }
                scope = value
            case "--audience":
                guard audience == nil else { return nil }
                audience = value
            default:
                return nil
            }
        }
        do {
            try ConnectionSettings.validate(timeout: connection.timeout)
            try TokenOptions.validate(account: account, minValid: minValid)
        } catch {
            return nil
        }
    }

    var connection: ConnectionSettings {
        ConnectionSettings(socket: socket, timeout: timeout ?? ConnectionOptions.defaultTimeout)
    }
}

import ArgumentParser
import TokendProtocol

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

    /// `NAME ACCOUNT [OPTION VALUE]… [-- CMD…]` (the options of `RequestField.option` and
    /// `--socket`), also with `--opt=value`. Anything else — help, a typo, a bad value — returns nil and takes the
    /// ArgumentParser path, which owns every error message; tests check both paths agree.
    static func parseFast(_ arguments: [String]) -> Self? {
        guard let fast = FastArguments(arguments, name: fastName) else { return nil }
        var options = TokenOptions()
        options.account = fast.account
        options.fields = fast.fields
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

/// The options of `token`, `header`, `exec` and `exec-credential` as plain values, read through
/// the protocol's one table of request fields: ArgumentParser fills `TokenOptions` and hands its
/// values on as these (`TokenOptions.fields`); the fast path reads argv with `take`, which finds
/// each option's field by `RequestField.option` and parses its value by the field's type; and
/// `command` turns them into the one `token` command. A new field is its row in `RequestField`,
/// its place in `TokenArgs`, and its `@Option` in `TokenOptions`.
struct TokenFields: Equatable {
    /// The request's fields the options set.
    var request = RequestFields()
    /// Where to connect, no field of the request.
    var socket: String?

    /// Takes `flag`'s `value`; false for an unknown flag, a value that does not parse or a flag
    /// given twice (ArgumentParser then says what is wrong).
    mutating func take(_ flag: String, _ value: String) -> Bool {
        if flag == "--socket" {
            guard socket == nil else { return false }
            socket = value
            return true
        }
        guard let field = RequestField(option: flag), request[field] == nil, let parsed = field.value(parsing: value) else { return false }
        request[field] = parsed
        return true
    }

    /// The `token` command these fields make for `account`: the daemon waits for a refresh as
    /// long as tokenctl waits for its answer.
    func command(account: String) -> Command {
        var fields = request
        fields.set(.account, account)
        fields.set(.timeout, connection.timeout)
        return .token(TokenArgs(fields: fields))
    }

    var connection: ConnectionSettings {
        ConnectionSettings(socket: socket, timeout: request.number(.timeout) ?? ConnectionOptions.defaultTimeout)
    }
}

/// The fast path's reading of `NAME ACCOUNT [options] [-- CMD…]` as plain values, validated as
/// `TokenOptions` and `ConnectionOptions` validate them; nil for anything else.
struct FastArguments {
    var account: String
    var fields = TokenFields()
    var trailing: [String]?

    /// The values of options ArgumentParser has parsed.
    init(_ options: TokenOptions) {
        account = options.account
        fields = options.fields
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
            guard !value.hasPrefix("-"), fields.take(name, value) else { return nil }
        }
        do {
            try ConnectionSettings.validate(timeout: connection.timeout)
            try TokenOptions.validate(account: account, fields)
        } catch {
            return nil
        }
    }

    var connection: ConnectionSettings { fields.connection }
}

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

    /// `NAME ACCOUNT [--min-valid S] [--kind K] [--scope S] [--audience A] [--socket P] [--timeout S]
    /// [-- CMD…]`, also with
    /// `--opt=value`. Anything else — help, a typo, a bad value — returns nil and takes the
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

/// The options of `token`, `header`, `exec` and `exec-credential` as plain values, and the one
/// table of them that both paths read: ArgumentParser fills `TokenOptions` and hands its values
/// on as these (`TokenOptions.fields`), the fast path reads argv with `take`, which maps each
/// option onto its field of the request (`TokenRequestField.option`, the protocol's table), and
/// `command` turns them into the one `token` command. A new field is a row in that table, a
/// property and a case in `take` here, and its `@Option` in `TokenOptions`.
struct TokenFields: Equatable {
    var minValid: Double?
    var kind: Tokenctl.KindArgument?
    var scope: String?
    var audience: String?
    var socket: String?
    var timeout: Double?

    /// Takes `flag`'s `value`; false for an unknown flag, a value that does not parse or a flag
    /// given twice (ArgumentParser then says what is wrong).
    mutating func take(_ flag: String, _ value: String) -> Bool {
        // `--socket` is where to connect, no field of the request.
        if flag == "--socket" { return Self.fill(&socket, value) }
        switch TokenRequestField(option: flag) {
        case .minValid: return Self.fill(&minValid, Double(value))
        case .kind: return Self.fill(&kind, Tokenctl.KindArgument(rawValue: value))
        case .scope: return Self.fill(&scope, value)
        case .audience: return Self.fill(&audience, value)
        case .timeout: return Self.fill(&timeout, Double(value))
        case .account, .id, .op, nil: return false
        }
    }

    private static func fill<Value>(_ slot: inout Value?, _ value: Value?) -> Bool {
        guard slot == nil, let value else { return false }
        slot = value
        return true
    }

    /// The `token` command these fields make for `account`: the daemon waits for a refresh as
    /// long as tokenctl waits for its answer.
    func command(account: String) -> Command {
        .token(TokenArgs(account: account, minValid: minValid, kind: kind?.tokenKind, timeout: connection.timeout, scope: scope, audience: audience))
    }

    var connection: ConnectionSettings {
        ConnectionSettings(socket: socket, timeout: timeout ?? ConnectionOptions.defaultTimeout)
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
            try TokenOptions.validate(account: account, minValid: fields.minValid)
        } catch {
            return nil
        }
    }

    var connection: ConnectionSettings { fields.connection }
}

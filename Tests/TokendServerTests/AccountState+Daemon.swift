@testable import TokendServer

// The daemon's account state (TokendServer's names for TokendCore's generic one): this module
// imports both, so its own names settle which the tests mean.
typealias AccountState = TokendServer.AccountState
typealias AccountInput = TokendServer.AccountInput
typealias AccountEffect = TokendServer.AccountEffect

import FoundationEssentials

// etcd v3's JSON gateway (grpc-gateway over etcdserverpb, served at /v3/ by etcd 3.4): keys and
// values are base64, int64 fields are JSON strings, and fields at their zero value are left out
// (proto3's JSON mapping). Only the fields tokend reads or sends are here.

/// An int64 as the gateway writes it (a string), or a number; bounded by its type, never trapping.
struct EtcdNumber: Codable, Sendable, Equatable {
    var value: Int64

    init(_ value: Int64) { self.value = value }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            value = number
        } else if let parsed = Int64(try container.decode(String.self)) {  // conversion: a failable parse of a String
            value = parsed
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an int64")
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(value))
    }
}

struct EtcdHeader: Decodable, Sendable {
    var revision: EtcdNumber?
}

struct EtcdKeyValue: Decodable, Sendable {
    var key: String?
    var value: String?
    var create_revision: EtcdNumber?
    var mod_revision: EtcdNumber?
    var lease: EtcdNumber?

    var keyBytes: [UInt8] { key.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? [] }
    var valueBytes: [UInt8] { value.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? [] }
}

struct EtcdRangeRequest: Encodable, Sendable {
    var key: String
    var range_end: String?
}

struct EtcdRangeAnswer: Decodable, Sendable {
    var header: EtcdHeader?
    var kvs: [EtcdKeyValue]?
}

/// One comparison of a transaction: `target` is VERSION, CREATE, MOD, VALUE or LEASE.
struct EtcdCompare: Encodable, Sendable {
    var key: String
    var target: String
    var result = "EQUAL"
    var create_revision: EtcdNumber?
    var mod_revision: EtcdNumber?
    var lease: EtcdNumber?
}

struct EtcdPut: Encodable, Sendable {
    var key: String
    var value: String
    var lease: EtcdNumber?
}

struct EtcdKeyOnly: Encodable, Sendable {
    var key: String
}

struct EtcdRequestOp: Encodable, Sendable {
    var request_put: EtcdPut?
    var request_range: EtcdRangeRequest?
    var request_delete_range: EtcdKeyOnly?
    /// A transaction inside the transaction (etcd 3.3 and later): its own compare decides its ops.
    var request_txn: EtcdNestedTxn?
}

/// A nested transaction, boxed: a struct cannot hold a value of its own type. Encoded as the
/// transaction itself.
final class EtcdNestedTxn: Encodable, Sendable {
    let txn: EtcdTxnRequest

    init(_ txn: EtcdTxnRequest) { self.txn = txn }

    func encode(to encoder: any Encoder) throws {
        try txn.encode(to: encoder)
    }
}

struct EtcdTxnRequest: Encodable, Sendable {
    var compare: [EtcdCompare]
    var success: [EtcdRequestOp]
    var failure: [EtcdRequestOp]
}

struct EtcdResponseOp: Decodable, Sendable {
    var response_range: EtcdRangeAnswer?
}

struct EtcdTxnAnswer: Decodable, Sendable {
    var header: EtcdHeader?
    var succeeded: Bool?
    var responses: [EtcdResponseOp]?
}

struct EtcdLeaseRequest: Encodable {
    var TTL: EtcdNumber?
    var ID: EtcdNumber?
}

struct EtcdLeaseAnswer: Decodable, Sendable {
    var ID: EtcdNumber?
    var TTL: EtcdNumber?
}

/// `/v3/lease/keepalive` is a stream: each answer comes wrapped in `result`.
struct EtcdKeepAliveAnswer: Decodable, Sendable {
    var result: EtcdLeaseAnswer?
}

struct EtcdAuthRequest: Encodable {
    var name: String
    var password: String
}

struct EtcdAuthAnswer: Decodable, Sendable {
    var token: String?
}

struct EtcdWatchCreate: Encodable {
    var key: String
    var range_end: String
    var start_revision: EtcdNumber?
}

struct EtcdWatchRequest: Encodable {
    var create_request: EtcdWatchCreate
}

struct EtcdWatchEvent: Decodable, Sendable {
    /// PUT (left out: it is the zero value) or DELETE.
    var type: String?
    var kv: EtcdKeyValue?
}

struct EtcdWatchResult: Decodable, Sendable {
    var header: EtcdHeader?
    var created: Bool?
    var canceled: Bool?
    /// Why etcd cancelled the watch: a compaction, or an auth token it no longer takes.
    var cancel_reason: String?
    var compact_revision: EtcdNumber?
    var events: [EtcdWatchEvent]?
}

struct EtcdWatchAnswer: Decodable, Sendable {
    var result: EtcdWatchResult?
}

/// What the gateway answers instead, with a non-200 status: gRPC's code and etcd's message.
struct EtcdErrorAnswer: Decodable, Sendable {
    var error: String?
    var message: String?
    var code: Int?
}

extension Array where Element == UInt8 {
    var base64: String { Data(self).base64EncodedString() }
}

/// The key just past every key that starts with `prefix`: etcd's `range_end` for a prefix.
func etcdPrefixEnd(_ prefix: [UInt8]) -> [UInt8] {
    var end = prefix
    while let last = end.last {
        if last < 0xFF {
            end[end.count - 1] = last + 1
            return end
        }
        end.removeLast()
    }
    return [0]
}

/// A JSON number, or a string holding one: Firebase and Google send `expires_in` and
/// `interval` as strings, OAuth as numbers; both are accepted from either.
struct FlexibleNumber: Decodable {
    var seconds: Double?
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Double.self) {
            seconds = number
        } else {
            seconds = Double(try container.decode(String.self))
        }
    }
}

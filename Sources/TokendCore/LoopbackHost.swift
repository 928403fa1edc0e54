/// Hosts whose traffic never leaves the machine: where plain HTTP may carry a secret.
public enum LoopbackHost {
    /// `localhost`, an address in 127.0.0.0/8, or `::1`. By the name alone: a name that only
    /// resolves to loopback (an /etc/hosts entry) may not tomorrow.
    public static func contains(_ host: Substring) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCII) && octet.allSatisfy(\.isNumber) && (Int(octet) ?? 256) <= 255  // conversion: a failable parse of a String
        }
    }
}

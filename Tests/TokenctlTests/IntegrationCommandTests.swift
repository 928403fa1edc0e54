import Foundation
import Testing
import TokendCore
import TokendProtocol

@testable import TokenctlKit

/// The pure parts of exec-credential, git-credential and watch's readable lines.
@Suite struct IntegrationCommandTests {
    @Test func execCredentialVersionNegotiation() throws {
        let group = "client.authentication.k8s.io"
        #expect(try Tokenctl.ExecCredential.requestedVersion(nil) == "\(group)/v1")
        #expect(try Tokenctl.ExecCredential.requestedVersion(" ") == "\(group)/v1")
        #expect(try Tokenctl.ExecCredential.requestedVersion(#"{"apiVersion":"\#(group)/v1beta1","kind":"ExecCredential"}"#) == "\(group)/v1beta1")
        for bad in [#"{"apiVersion":"\#(group)/v1alpha1"}"#, "{}", "[", #"{"apiVersion":3}"#] {
            #expect(throws: TokenctlError.self) { try Tokenctl.ExecCredential.requestedVersion(bad) }
        }
    }

    @Test func execCredentialShape() throws {
        var response = Response()
        response.account = "work"
        response.token = "header.payload.signature"
        response.expiresAt = "2026-11-23T14:00:00Z"
        let text = Tokenctl.ExecCredential.render(apiVersion: "client.authentication.k8s.io/v1", grant: try TokenGrant(response))
        #expect(text == #"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"expirationTimestamp":"2026-11-23T14:00:00Z","token":"header.payload.signature"}}"#)
    }

    /// Google's executable response, version 1 (google-auth's "executable response format").
    @Test func googleExecutableResponseShape() throws {
        var response = Response()
        response.account = "work"
        response.token = "header.payload.signature"
        response.expiresAt = "2026-11-23T14:00:00Z"
        let text = GoogleExecutableResponse.render(try TokenGrant(response), tokenType: GoogleExecutableResponse.idTokenType)
        #expect(text == #"{"expiration_time":1795442400,"id_token":"header.payload.signature","success":true,"token_type":"urn:ietf:params:oauth:token-type:id_token","version":1}"#)
        let failure = GoogleExecutableResponse.render(failure: TokenctlError(.needsLogin, "work has no session", next: "run: tokenctl login work"))
        #expect(failure == #"{"code":"needs_login","message":"work has no session; run: tokenctl login work","success":false,"version":1}"#)
    }

    @Test func googleSubjectTokenTypes() throws {
        #expect(try GoogleExecutableResponse.tokenType(asked: nil) == GoogleExecutableResponse.idTokenType)
        #expect(try GoogleExecutableResponse.tokenType(asked: GoogleExecutableResponse.jwtType) == GoogleExecutableResponse.jwtType)
        #expect(throws: TokenctlError.self) { try GoogleExecutableResponse.tokenType(asked: "urn:ietf:params:oauth:token-type:saml2") }
    }

    @Test func aGrantRefusesWhatCannotBePassedOn() {
        var response = Response()
        response.token = "two words"
        response.expiresAt = "2026-11-23T14:00:00Z"
        #expect(throws: TokenctlError.self) { try TokenGrant(response) }
        response.token = "ok"
        response.expiresAt = "soon"
        #expect(throws: TokenctlError.self) { try TokenGrant(response) }
    }

    @Test func gitCredentialRequestParsing() {
        let fields = Tokenctl.GitCredential.parse(Array("protocol=https\nhost=git.example.com\nwwwauth[]=Basic realm=x\npath=a/b=c.git\n\nhost=ignored\n".utf8))
        #expect(fields["protocol"] == "https")
        #expect(fields["host"] == "git.example.com")
        #expect(fields["path"] == "a/b=c.git")
        #expect(Tokenctl.GitCredential.value("a\nb") == "ab")
    }

    @Test func gitCredentialStoreAndEraseReadStdinAndSayNothing() throws {
        for operation in ["store", "erase"] {
            let console = CapturingConsole(input: "protocol=https\nhost=x\npassword=secret\n\n")
            #expect(runTokenctl(["git-credential", operation], console: console) == 0)
            #expect(console.stdout.isEmpty && console.stderr.isEmpty)
        }
        let unclaimedProtocol = CapturingConsole(input: "protocol=ssh\nhost=x\n")
        #expect(runTokenctl(["git-credential", "get"], console: unclaimedProtocol) == 0, "no daemon needed to say nothing")
        #expect(unclaimedProtocol.stdout.isEmpty)
    }

    @Test func watchLinesForHumans() {
        let refreshed = #"{"account":"work","at":"2026-11-22T10:55:12Z","event":"refreshed","expires_at":"2026-11-22T11:55:12Z"}"#
        #expect(WatchLine.render(Array(refreshed.utf8)) == "2026-11-22T10:55:12Z  work  refreshed  expires 2026-11-22T11:55:12Z")
        let failed = #"{"account":"work","at":"T","error":{"code":"http_503","message":"HTTP 503"},"event":"refresh_failed","retry_at":"R"}"#
        #expect(WatchLine.render(Array(failed.utf8)) == "T  work  refresh_failed  http_503: HTTP 503  retry at R")
        #expect(WatchLine.render(Array(#"{"at":"T","event":"keyring_locked"}"#.utf8)) == "T  -  keyring_locked")
        #expect(WatchLine.render(Array("not json\u{1b}[2J".utf8)) == "not json [2J")
    }
}

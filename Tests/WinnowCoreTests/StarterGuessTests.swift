import Foundation
import XCTest

@testable import WinnowCore

/// `winnow init`'s guesses from a schema alone (no rows): candidate keys, winners, references.
final class StarterGuessTests: XCTestCase {
    func column(_ name: String, _ type: String = "TEXT", pk: Int = 0) -> LiveColumn {
        LiveColumn(name: name, type: type, notNull: false, primaryKeyIndex: pk)
    }

    func table(_ name: String, _ columns: [LiveColumn], foreignKeys: [LiveForeignKey] = [], indexes: [LiveIndex] = []) -> LiveTable {
        LiveTable(name: name, columns: columns, hasRowID: true, isVirtual: false, foreignKeys: foreignKeys, indexes: indexes)
    }

    func testIdentifierColumnsAreStrongAndUniqueOnesAreLeftOut() {
        let users = table(
            "users", [column("id", "INTEGER", pk: 1), column("Email"), column("external_id"), column("nickname"), column("uuid")],
            indexes: [LiveIndex(name: "users_uuid", columns: ["uuid"], unique: true, partial: false, origin: .createIndex)])
        let candidates = StarterGuess.candidates(users)
        XCTAssertEqual(candidates.map(\.columns), [["Email"], ["external_id"]], "uuid is already unique; nickname is not an identifier")
        XCTAssertTrue(candidates.allSatisfy(\.strong))
    }

    func testLookupTableNameIsScopedByItsForeignKeys() {
        let album = table(
            "Album", [column("AlbumId", "INTEGER", pk: 1), column("Title"), column("ArtistId", "INTEGER")],
            foreignKeys: [
                LiveForeignKey(childTable: "Album", childColumns: ["ArtistId"], parentTable: "Artist", parentColumns: ["ArtistId"])
            ])
        XCTAssertEqual(StarterGuess.candidates(album).map(\.columns), [["Title", "ArtistId"]])
        let genre = table("Genre", [column("GenreId", "INTEGER", pk: 1), column("Name")])
        XCTAssertEqual(StarterGuess.candidates(genre).map(\.columns), [["Name"]])
        // A table with more than a name is not a lookup table.
        let track = table("Track", [column("TrackId", "INTEGER", pk: 1), column("Name"), column("Composer")])
        XCTAssertEqual(StarterGuess.candidates(track).map(\.columns), [])
    }

    func testPersonNamesWithABirthDate() {
        let people = table("people", [column("id", "INTEGER", pk: 1), column("first_name"), column("last_name"), column("date_of_birth")])
        XCTAssertEqual(StarterGuess.candidates(people).map(\.columns), [["first_name", "last_name", "date_of_birth"]])
    }

    func testCoreDataEntityKeyAndImpliedReferences() {
        let user = table(
            "ZUSER",
            [column("Z_PK", "INTEGER", pk: 1), column("Z_ENT", "INTEGER"), column("Z_OPT", "INTEGER"), column("ZUSERID", "INTEGER")])
        let book = table(
            "ZBOOK", [column("Z_PK", "INTEGER", pk: 1), column("Z_ENT", "INTEGER"), column("Z_OPT", "INTEGER"), column("ZUSER", "INTEGER")])
        XCTAssertEqual(StarterGuess.candidates(user).map(\.columns), [["ZUSERID"]])
        XCTAssertEqual(StarterGuess.impliedReferences(to: user, in: LiveSchema(tables: [user, book])).map(\.label), ["ZBOOK.ZUSER"])
        XCTAssertEqual(StarterGuess.winner(user).yaml, "\n      - Z_PK: asc")
        XCTAssertFalse(StarterGuess.isCandidateTable(table("Z_PRIMARYKEY", [column("Z_ENT", "INTEGER", pk: 1)])))
    }

    func testWinnerPrefersCreationThenModificationThenCompleteness() {
        XCTAssertEqual(
            StarterGuess.winner(table("t", [column("id", "INTEGER", pk: 1), column("updated_at"), column("CreatedAt")])).yaml,
            "\n      - CreatedAt: asc")
        XCTAssertEqual(
            StarterGuess.winner(table("t", [column("id", "INTEGER", pk: 1), column("last_modified")])).yaml, "\n      - last_modified: desc"
        )
        XCTAssertEqual(StarterGuess.winner(table("t", [column("id", "INTEGER", pk: 1), column("x")])).yaml, " most_complete")
    }

    func testNamesAreQuotedWhenYAMLWouldReadThemOtherwise() {
        XCTAssertEqual(StarterGuess.yamlName("email"), "email")
        XCTAssertEqual(StarterGuess.yamlName("yes"), "\"yes\"")
        XCTAssertEqual(StarterGuess.yamlName("first name"), "\"first name\"")
        XCTAssertEqual(StarterGuess.yamlName("a\"b"), "\"a\\\"b\"")
        XCTAssertEqual(StarterGuess.yamlName("1st"), "\"1st\"")
    }

    func testRelativePaths() {
        XCTAssertEqual(Starter.relative("/w/data/app.sqlite", from: "/w/jobs"), "../data/app.sqlite")
        XCTAssertEqual(Starter.relative("/w/app.sqlite", from: "/w"), "app.sqlite")
    }
}

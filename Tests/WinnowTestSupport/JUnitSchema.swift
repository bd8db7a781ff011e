import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The rules of the JUnit XML schema CI servers read (the `junit.xsd` of Jenkins' JUnit plugin
/// and of the Ant JUnit task): `testsuites` of `testsuite` elements, each with a `name` and a
/// `tests` count, holding `testcase` elements with a `name` and at most one `skipped` and any
/// `failure`/`error` (with an optional `message`). Numbers must be numbers, and the counts must
/// match the cases. Returns the violations; none means valid.
package enum JUnitSchema {
    package static func violations(_ xml: String) -> [String] {
        final class Reader: NSObject, XMLParserDelegate {
            var problems: [String] = []
            var stack: [String] = []
            // Per suite: declared counts, and what it holds.
            var suiteTests = 0, suiteFailures = 0, declaredTests: Int?, declaredFailures: Int?
            var caseFailures = 0

            static let children: [String: Set<String>] = [
                "testsuites": ["testsuite"],
                "testsuite": ["properties", "testcase", "system-out", "system-err"],
                "properties": ["property"],
                "testcase": ["skipped", "error", "failure", "system-out", "system-err"],
            ]

            func integer(_ attributes: [String: String], _ name: String, in element: String, required: Bool) -> Int? {
                guard let text = attributes[name] else {
                    if required { problems.append("<\(element)> lacks the required attribute \(name)") }
                    return nil
                }
                guard let value = Int(text), value >= 0 else {
                    problems.append("<\(element)> \(name)=\"\(text)\" is not a count")
                    return nil
                }
                return value
            }

            func parser(
                _ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                if let parent = stack.last {
                    if !(Self.children[parent]?.contains(element) ?? false) { problems.append("<\(element)> inside <\(parent)>") }
                } else if element != "testsuites" && element != "testsuite" {
                    problems.append("the root is <\(element)>, not <testsuites> or <testsuite>")
                }
                if let time = attributes["time"], Double(time) == nil { problems.append("<\(element)> time=\"\(time)\" is not a number") }
                switch element {
                case "testsuites":
                    for name in ["tests", "failures", "errors"] { _ = integer(attributes, name, in: element, required: false) }
                case "testsuite":
                    if attributes["name"] == nil { problems.append("<testsuite> lacks the required attribute name") }
                    declaredTests = integer(attributes, "tests", in: element, required: true)
                    declaredFailures = integer(attributes, "failures", in: element, required: false)
                    _ = integer(attributes, "errors", in: element, required: false)
                    suiteTests = 0
                    suiteFailures = 0
                case "testcase":
                    if attributes["name"] == nil { problems.append("<testcase> lacks the required attribute name") }
                    suiteTests += 1
                    caseFailures = 0
                case "failure":
                    caseFailures += 1
                    if caseFailures == 1 { suiteFailures += 1 }
                case "property":
                    if attributes["name"] == nil || attributes["value"] == nil { problems.append("<property> needs name and value") }
                default:
                    break
                }
                stack.append(element)
            }

            func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
                stack.removeLast()
                guard element == "testsuite" else { return }
                if let declaredTests, declaredTests != suiteTests {
                    problems.append("a testsuite declares tests=\(declaredTests) and holds \(suiteTests) testcases")
                }
                if let declaredFailures, declaredFailures != suiteFailures {
                    problems.append("a testsuite declares failures=\(declaredFailures) and holds \(suiteFailures) failing testcases")
                }
            }
        }
        let reader = Reader()
        let parser = XMLParser(data: Data(xml.utf8))
        parser.delegate = reader
        if !parser.parse() { reader.problems.append("not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")") }
        return reader.problems
    }
}

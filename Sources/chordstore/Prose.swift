/// Joins the lines of each paragraph of a help text into one, so that `--help` wraps it
/// to the terminal's width as a whole; the source keeps its short lines. A blank line
/// ends a paragraph; a line that begins with a space, `- ` or `• ` (a table row, a list
/// item, an example) starts a line of its own, as does the line after it when indented.
func prose(_ text: String) -> String {
    var out: [String] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let starts = line.isEmpty || line.hasPrefix(" ") || line.hasPrefix("- ") || line.hasPrefix("• ")
        if let previous = out.last, !previous.isEmpty, !line.isEmpty, !starts, !(previous.first == " ") {
            out[out.count - 1] = previous + " " + line
        } else {
            out.append(String(line))
        }
    }
    return out.joined(separator: "\n")
}

"""Writing benchmark tables into docs/performance.md."""


def replace_section(doc, name, text):
    """`doc` with the text between `<!-- name:begin -->` and `<!-- name:end -->`
    replaced by `text` (unchanged when the markers are absent)."""
    b, e = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    if b not in doc:
        return doc
    a, z = doc.index(b) + len(b), doc.index(e)
    return doc[:a] + "\n" + text + "\n" + doc[z:]

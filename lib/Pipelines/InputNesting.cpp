//===- InputNesting.cpp - Refuse input nested deeper than the parser can take //

#include "sparse-opt/Pipelines/InputNesting.h"

unsigned mlir::sgpu::lineNestedTooDeep(llvm::StringRef text) {
  unsigned depth = 0, line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '\n') {
      ++line;
    } else if (ch == '"') { // a string: brackets inside do not nest
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
    } else if (ch == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
      --i; // the newline is counted above
    } else if (ch == '(' || ch == '[' || ch == '{' || ch == '<') {
      if (++depth > kMaxInputNesting)
        return line;
    } else if ((ch == ')' || ch == ']' || ch == '}' || ch == '>') && depth) {
      // `->` is an arrow, not a closing bracket.
      if (!(ch == '>' && i > 0 && text[i - 1] == '-'))
        --depth;
    }
  }
  return 0;
}
